-- Version 8: who gave a label (the name the person typed in the inbox, or the CLI's --by, by
-- default the user running it). Labels given before this version have ''. Numbered 8, after the
-- usage migration (7) that was written at the same time: the store applies a skipped one later.
ALTER TABLE endstate_reviews ADD COLUMN labelled_by TEXT NOT NULL DEFAULT '';
