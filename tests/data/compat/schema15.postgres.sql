SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

CREATE TABLE public.endstate_audits (
    run_id text NOT NULL,
    agent text NOT NULL,
    task_type text NOT NULL,
    due_at double precision NOT NULL,
    outcome text,
    note text DEFAULT ''::text NOT NULL,
    checked_at double precision
);

CREATE TABLE public.endstate_entries (
    run_id text NOT NULL,
    seq integer NOT NULL,
    entry text NOT NULL
);

CREATE TABLE public.endstate_reviews (
    id bigint NOT NULL,
    run_id text NOT NULL,
    agent text NOT NULL,
    task_type text NOT NULL,
    label text NOT NULL,
    note text DEFAULT ''::text NOT NULL,
    labelled_at double precision NOT NULL,
    labelled_by text DEFAULT ''::text NOT NULL
);

ALTER TABLE public.endstate_reviews ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.endstate_reviews_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.endstate_runs (
    run_id text NOT NULL,
    agent text NOT NULL,
    task text NOT NULL,
    task_type text NOT NULL,
    status text NOT NULL,
    state text DEFAULT '{}'::text NOT NULL,
    started_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    ended_at double precision,
    stop_reason text,
    stop_limit text,
    turns integer DEFAULT 0 NOT NULL,
    input_tokens bigint DEFAULT 0 NOT NULL,
    output_tokens bigint DEFAULT 0 NOT NULL,
    cost_usd double precision DEFAULT 0 NOT NULL,
    active_seconds double precision DEFAULT 0 NOT NULL,
    waiting_seconds double precision DEFAULT 0 NOT NULL,
    trace_id text,
    note text DEFAULT ''::text NOT NULL,
    summary text DEFAULT ''::text NOT NULL,
    output text DEFAULT ''::text NOT NULL,
    verified integer DEFAULT 0 NOT NULL,
    error_type text,
    segments integer DEFAULT 0 NOT NULL,
    checkpoints integer DEFAULT 0 NOT NULL,
    question text,
    pending text,
    deadline double precision,
    suspended_at double precision,
    interrupted integer DEFAULT 0 NOT NULL,
    owner text,
    lease_until double precision,
    snapshot text,
    answer text,
    approved integer,
    answered_at double precision,
    cost_known integer DEFAULT 1 NOT NULL,
    cache_read_tokens bigint DEFAULT 0 NOT NULL,
    cache_write_tokens bigint DEFAULT 0 NOT NULL,
    refused text,
    head_version integer,
    lease_seconds double precision,
    last_answer_by text,
    last_answer_at double precision,
    last_answer_kind text,
    last_answer text,
    journal_length integer
);

CREATE TABLE public.endstate_schema (
    version integer NOT NULL,
    applied_at double precision
);

INSERT INTO public.endstate_audits VALUES ('c-audited', 'c-audited', 'default', 1796562958.5253909, NULL, '', NULL);

INSERT INTO public.endstate_entries VALUES ('c-question', 0, '{"text":"task of c-question","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-question', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-question', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-question', 3, '{"input_tokens":160,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"need_help","note":"Which region: EU or US?"},"id":"toolu_002_0","name":"finish","type":"call"}],"response_id":"msg_002","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-question', 4, '{"suspension":{"call_id":"toolu_002_0","deadline":1796649297.7935848,"question":"Which region: EU or US?","suspended_at":1796562897.7935848},"type":"suspended"}');
INSERT INTO public.endstate_entries VALUES ('c-approval', 0, '{"text":"task of c-approval","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-approval', 1, '{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"amount":120.0,"customer":"ACME"},"id":"toolu_001_1","name":"send_invoice","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-approval', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-approval', 3, '{"suspension":{"call_id":"toolu_001_1","deadline":1796649297.85475,"pending":{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"},"question":"Approve the call send_invoice({\"amount\": 120.0, \"customer\": \"ACME\"})?","suspended_at":1796562897.85475},"type":"suspended"}');
INSERT INTO public.endstate_entries VALUES ('c-deny', 0, '{"text":"task of c-deny","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-deny', 1, '{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"amount":120.0,"customer":"ACME"},"id":"toolu_001_1","name":"send_invoice","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-deny', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-deny', 3, '{"suspension":{"call_id":"toolu_001_1","deadline":1796649297.9712064,"pending":{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"},"question":"Approve the call send_invoice({\"amount\": 120.0, \"customer\": \"ACME\"})?","suspended_at":1796562897.9712064},"type":"suspended"}');
INSERT INTO public.endstate_entries VALUES ('c-expired', 0, '{"text":"task of c-expired","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-expired', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"need_help","note":"Ship today?"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-expired', 2, '{"suspension":{"call_id":"toolu_001_0","deadline":1796562899.0440524,"question":"Ship today?","suspended_at":1796562898.0440524},"type":"suspended"}');
INSERT INTO public.endstate_entries VALUES ('c-timeout', 0, '{"text":"task of c-timeout","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-timeout', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"need_help","note":"Refund twice?"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-timeout', 2, '{"suspension":{"call_id":"toolu_001_0","deadline":1796562899.1187763,"question":"Refund twice?","suspended_at":1796562898.1187763},"type":"suspended"}');
INSERT INTO public.endstate_entries VALUES ('c-answered', 0, '{"text":"task of c-answered","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-answered', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"need_help","note":"Which customer?"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-answered', 2, '{"suspension":{"call_id":"toolu_001_0","deadline":1796649298.1815546,"question":"Which customer?","suspended_at":1796562898.1815546},"type":"suspended"}');
INSERT INTO public.endstate_entries VALUES ('c-cancelled', 0, '{"text":"task of c-cancelled","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-cancelled', 1, '{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"customer":"BETA"},"id":"toolu_001_1","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-cancelled', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-cancelled', 3, '{"call_id":"toolu_001_1","ran":"lookup","seen":"cd78250ad4e913d7","text":"BETA: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-cancelled', 4, '{"at":1796562898.278358,"note":"The caller cancelled the run.","reason":"cancelled","type":"stopped"}');
INSERT INTO public.endstate_entries VALUES ('c-cut', 0, '{"text":"task of c-cut","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-cut', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"customer":"SLOW"},"id":"toolu_001_0","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-cut', 2, '{"call_id":"toolu_001_0","is_error":true,"ran":"lookup","text":"Outcome unknown: the run was stopped while this call ran, so it may or may not have taken effect. Check before you call it again.","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-cut', 3, '{"at":1796562898.304116,"note":"The run was cancelled.","reason":"cancelled","type":"stopped"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 0, '{"text":"task of c-done","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 1, '{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"customer":"BETA"},"id":"toolu_001_1","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 3, '{"call_id":"toolu_001_1","ran":"lookup","seen":"cd78250ad4e913d7","text":"BETA: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 4, '{"input_tokens":160,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"customer":"GAMMA"},"id":"toolu_002_0","name":"lookup","type":"call"}],"response_id":"msg_002","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 5, '{"call_id":"toolu_002_0","ran":"lookup","seen":"6c7d3ae026a6a7ec","text":"GAMMA: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 6, '{"input_tokens":200,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"done","note":"three customers looked up"},"id":"toolu_003_0","name":"finish","type":"call"}],"response_id":"msg_003","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 7, '{"at":1796562898.3436825,"reason":"success","type":"stopped"}');
INSERT INTO public.endstate_entries VALUES ('c-limit', 0, '{"text":"task of c-limit","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-limit', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-limit', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-limit', 3, '{"at":1796562898.4140182,"limit":"turns","reason":"limit","type":"stopped"}');
INSERT INTO public.endstate_entries VALUES ('c-gave-up', 0, '{"text":"task of c-gave-up","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-gave-up', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"give_up","note":"no such customer"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-gave-up', 2, '{"at":1796562898.4639773,"note":"no such customer","reason":"gave_up","type":"stopped"}');
INSERT INTO public.endstate_entries VALUES ('c-audited', 0, '{"text":"task of c-audited","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-audited', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"done","note":"audited"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-audited', 2, '{"at":1796562898.5196579,"reason":"success","type":"stopped"}');
INSERT INTO public.endstate_entries VALUES ('c-crashed', 0, '{"text":"task of c-crashed","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-crashed', 1, '{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"customer":"BETA"},"id":"toolu_001_1","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-crashed', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-answered', 3, '{"at":1796562900.5490873,"by":"person","reply":{"text":"DELTA","type":"answer"},"type":"answered"}');
INSERT INTO public.endstate_entries VALUES ('c-answered', 4, '{"call_id":"toolu_001_0","text":"Answer from a person: DELTA","type":"result"}');

INSERT INTO public.endstate_runs VALUES ('c-gave-up', 'c-gave-up', 'task of c-gave-up', 'default', 'finished', '{}', 1796562898.4599583, 1796562898.464322, 1796562898.464322, 'gave_up', NULL, 1, 120, 40, 0.00096, 0.000537, 0, NULL, 'no such customer', 'Stopped: gave_up after 1 turn, 160 tokens, $0.0010. No tool was called.', '', 0, NULL, 1, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL, '{"agent":"c-gave-up","kind":"finished","run_id":"c-gave-up","segment":1,"task_type":"default","usage":{"active_seconds":0.00047853000069153495,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 3);
INSERT INTO public.endstate_runs VALUES ('c-question', 'c-question', 'task of c-question', 'default', 'waiting', '{}', 1796562897.763078, 1796562897.7947557, NULL, 'need_help', NULL, 2, 280, 80, 0.00204, 0.018455, 0, NULL, 'Which region: EU or US?', 'Stopped: need_help after 2 turns, 360 tokens, $0.0020. Tool calls: lookup x1. Last result (lookup): ACME: net 30', '', 0, NULL, 1, 1, 'Which region: EU or US?', NULL, 1796649297.7935848, 1796562897.7935848, 0, NULL, NULL, '{"agent":"c-question","kind":"suspended","run_id":"c-question","segment":1,"task_type":"default","usage":{"active_seconds":0.018357369999648654,"cost_usd":0.00204,"input_tokens":280,"output_tokens":80,"turns":2},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 5);
INSERT INTO public.endstate_runs VALUES ('c-limit', 'c-limit', 'task of c-limit', 'default', 'finished', '{}', 1796562898.3747818, 1796562898.4148388, 1796562898.4148388, 'limit', 'turns', 1, 120, 40, 0.00096, 0.027376, 0, NULL, '', 'Stopped: limit (turns budget used up) after 1 turn, 160 tokens, $0.0010. Tool calls: lookup x1. Last result (lookup): ACME: net 30', '', 0, NULL, 1, 1, NULL, NULL, NULL, NULL, 0, NULL, NULL, '{"agent":"c-limit","kind":"limited","run_id":"c-limit","segment":1,"task_type":"default","usage":{"active_seconds":0.02727996800058463,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 4);
INSERT INTO public.endstate_runs VALUES ('c-approval', 'c-approval', 'task of c-approval', 'default', 'waiting', '{}', 1796562897.823884, 1796562897.8566537, NULL, 'need_help', NULL, 1, 120, 50, 0.00111, 0.030678, 0, NULL, 'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?', 'Stopped: need_help after 1 turn, 170 tokens, $0.0011. Tool calls: lookup x1. Last result (lookup): ACME: net 30', '', 0, NULL, 1, 1, 'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?', '{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"}', 1796649297.85475, 1796562897.85475, 0, NULL, NULL, '{"agent":"c-approval","kind":"suspended","run_id":"c-approval","segment":1,"task_type":"default","usage":{"active_seconds":0.030627500998889445,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 4);
INSERT INTO public.endstate_runs VALUES ('c-cancelled', 'c-ledger', 'task of c-cancelled', 'default', 'cancelled', '{}', 1796562898.2380967, 1796562898.2806573, NULL, 'cancelled', NULL, 1, 120, 50, 0.00111, 0.022957, 0, NULL, 'The caller cancelled the run.', 'Stopped: cancelled after 1 turn, 170 tokens, $0.0011. Tool calls: lookup x2. Last result (lookup): BETA: net 30', '', 0, NULL, 1, 2, NULL, NULL, NULL, NULL, 1, NULL, NULL, '{"agent":"c-ledger","kind":"cancelled","run_id":"c-cancelled","segment":1,"task_type":"default","usage":{"active_seconds":0.022946754999793484,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 5);
INSERT INTO public.endstate_runs VALUES ('c-deny', 'c-approval', 'task of c-deny', 'default', 'waiting', '{}', 1796562897.9354951, 1796562897.979293, NULL, 'need_help', NULL, 1, 120, 50, 0.00111, 0.041199, 0, NULL, 'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?', 'Stopped: need_help after 1 turn, 170 tokens, $0.0011. Tool calls: lookup x1. Last result (lookup): ACME: net 30', '', 0, NULL, 1, 1, 'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?', '{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"}', 1796649297.9712064, 1796562897.9712064, 0, NULL, NULL, '{"agent":"c-approval","kind":"suspended","run_id":"c-deny","segment":1,"task_type":"default","usage":{"active_seconds":0.041125084999293904,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 4);
INSERT INTO public.endstate_runs VALUES ('c-expired', 'c-expired', 'task of c-expired', 'default', 'waiting', '{}', 1796562898.0415876, 1796562898.0443504, NULL, 'need_help', NULL, 1, 120, 40, 0.00096, 0.000359, 0, NULL, 'Ship today?', 'Stopped: need_help after 1 turn, 160 tokens, $0.0010. No tool was called.', '', 0, NULL, 1, 0, 'Ship today?', NULL, 1796562899.0440524, 1796562898.0440524, 0, NULL, NULL, '{"agent":"c-expired","kind":"suspended","run_id":"c-expired","segment":1,"task_type":"default","usage":{"active_seconds":0.0003308809991722228,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 3);
INSERT INTO public.endstate_runs VALUES ('c-timeout', 'c-timeout', 'task of c-timeout', 'default', 'waiting', '{}', 1796562898.1045973, 1796562898.1191587, NULL, 'need_help', NULL, 1, 120, 40, 0.00096, 0.000425, 0, NULL, 'Refund twice?', 'Stopped: need_help after 1 turn, 160 tokens, $0.0010. No tool was called.', '', 0, NULL, 1, 0, 'Refund twice?', NULL, 1796562899.1187763, 1796562898.1187763, 0, NULL, NULL, '{"agent":"c-timeout","kind":"suspended","run_id":"c-timeout","segment":1,"task_type":"default","usage":{"active_seconds":0.00038756299909437075,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 3);
INSERT INTO public.endstate_runs VALUES ('c-cut', 'c-slow', 'task of c-cut', 'default', 'cancelled', '{}', 1796562898.2992249, 1796562898.3043563, NULL, 'cancelled', NULL, 1, 120, 40, 0.00096, 0.00076, 0, NULL, 'The run was cancelled.', 'Stopped: cancelled after 1 turn, 160 tokens, $0.0010. No tool was called.', '', 0, NULL, 1, 0, NULL, NULL, NULL, NULL, 1, NULL, NULL, '{"agent":"c-slow","kind":"cancelled","run_id":"c-cut","segment":1,"task_type":"default","usage":{"active_seconds":0.0007521730003645644,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 4);
INSERT INTO public.endstate_runs VALUES ('c-done', 'c-ledger', 'task of c-done', 'default', 'finished', '{}', 1796562898.3224325, 1796562898.344236, 1796562898.344236, 'success', NULL, 3, 480, 130, 0.00339, 0.01613, 0, NULL, '', 'Stopped: success after 3 turns, 610 tokens, $0.0034. Tool calls: lookup x3. Last result (lookup): GAMMA: net 30', 'three customers looked up', 0, NULL, 1, 3, NULL, NULL, NULL, NULL, 0, NULL, NULL, '{"agent":"c-ledger","kind":"finished","run_id":"c-done","segment":1,"task_type":"default","usage":{"active_seconds":0.01605551000102423,"cost_usd":0.00339,"input_tokens":480,"output_tokens":130,"turns":3},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 8);
INSERT INTO public.endstate_runs VALUES ('c-audited', 'c-audited', 'task of c-audited', 'default', 'finished', '{}', 1796562898.510519, 1796562898.5228791, 1796562898.5228791, 'success', NULL, 1, 120, 40, 0.00096, 0.000489, 0, NULL, '', 'Stopped: success after 1 turn, 160 tokens, $0.0010. No tool was called.', 'audited', 0, NULL, 1, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL, '{"agent":"c-audited","kind":"finished","run_id":"c-audited","segment":1,"task_type":"default","usage":{"active_seconds":0.00043845499931194354,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 3);
INSERT INTO public.endstate_runs VALUES ('c-crashed', 'c-ledger', 'task of c-crashed', 'default', 'running', '{}', 1796562899.623797, 1796562899.6274726, NULL, NULL, NULL, 1, 120, 50, 0.00111, 0.001003385001240531, 0, NULL, '', '', '', 0, NULL, 1, 1, NULL, NULL, NULL, NULL, 0, 'vm/4026531836/c77404778d95:17293:964a02ea', 1796562929.639747, '{"agent":"c-ledger","kind":"checkpoint","run_id":"c-crashed","segment":1,"task_type":"default","usage":{"active_seconds":0.001003385001240531,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 3);
INSERT INTO public.endstate_runs VALUES ('c-answered', 'c-followup', 'task of c-answered', 'default', 'running', '{}', 1796562898.1794317, 1796562900.553227, NULL, 'need_help', NULL, 1, 120, 40, 0.00096, 0.00045842899999115616, 2.367532730102539, NULL, 'Which customer?', 'Stopped: need_help after 1 turn, 160 tokens, $0.0010. No tool was called.', '', 0, NULL, 2, 1, 'Which customer?', NULL, 1796649298.1815546, 1796562898.1815546, 0, 'vm/4026531836/c77404778d95:17349:20353c48', 1796562930.577721, '{"agent":"c-followup","kind":"checkpoint","run_id":"c-answered","segment":2,"task_type":"default","usage":{"active_seconds":0.00045842899999115616,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1,"waiting_seconds":2.367532730102539},"version":2}', 'DELTA', NULL, 1796562900.5490873, 1, 0, 0, NULL, 2, 30, NULL, 1796562900.5490873, 'answer', 'DELTA', 5);

INSERT INTO public.endstate_schema VALUES (1, 1796562897.7066503);
INSERT INTO public.endstate_schema VALUES (2, 1796562897.7075057);
INSERT INTO public.endstate_schema VALUES (3, 1796562897.7078176);
INSERT INTO public.endstate_schema VALUES (4, 1796562897.7099113);
INSERT INTO public.endstate_schema VALUES (5, 1796562897.7239268);
INSERT INTO public.endstate_schema VALUES (6, 1796562897.7291512);
INSERT INTO public.endstate_schema VALUES (7, 1796562897.7389264);
INSERT INTO public.endstate_schema VALUES (8, 1796562897.739348);
INSERT INTO public.endstate_schema VALUES (9, 1796562897.739497);
INSERT INTO public.endstate_schema VALUES (10, 1796562897.7410142);
INSERT INTO public.endstate_schema VALUES (11, 1796562897.7414854);
INSERT INTO public.endstate_schema VALUES (12, 1796562897.74176);
INSERT INTO public.endstate_schema VALUES (13, 1796562897.75069);
INSERT INTO public.endstate_schema VALUES (14, 1796562897.7516403);
INSERT INTO public.endstate_schema VALUES (15, 1796562897.7518945);

SELECT pg_catalog.setval('public.endstate_reviews_id_seq', 1, false);

ALTER TABLE ONLY public.endstate_audits
    ADD CONSTRAINT endstate_audits_pkey PRIMARY KEY (run_id);

ALTER TABLE ONLY public.endstate_entries
    ADD CONSTRAINT endstate_entries_pkey PRIMARY KEY (run_id, seq);

ALTER TABLE ONLY public.endstate_reviews
    ADD CONSTRAINT endstate_reviews_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.endstate_runs
    ADD CONSTRAINT endstate_runs_pkey PRIMARY KEY (run_id);

CREATE INDEX endstate_audits_due ON public.endstate_audits USING btree (outcome, due_at);

CREATE INDEX endstate_reviews_run ON public.endstate_reviews USING btree (run_id, id);

CREATE INDEX endstate_runs_ended ON public.endstate_runs USING btree (status, ended_at);

CREATE INDEX endstate_runs_started ON public.endstate_runs USING btree (started_at);

CREATE INDEX endstate_runs_status ON public.endstate_runs USING btree (status, deadline);

CREATE INDEX endstate_runs_waiting ON public.endstate_runs USING btree (status, suspended_at NULLS FIRST, run_id) WHERE (status = 'waiting'::text);

CREATE INDEX endstate_runs_waiting_by ON public.endstate_runs USING btree (status, agent, task_type, suspended_at NULLS FIRST, run_id) WHERE (status = 'waiting'::text);
