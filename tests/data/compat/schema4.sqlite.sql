PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE endstate_schema (version INTEGER NOT NULL, applied_at REAL);
INSERT INTO endstate_schema VALUES(1,1796562822.9961032868);
INSERT INTO endstate_schema VALUES(2,1796562822.9963486193);
INSERT INTO endstate_schema VALUES(3,1796562822.9964604377);
INSERT INTO endstate_schema VALUES(4,1796562822.9965398311);
CREATE TABLE endstate_runs (
    run_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    task TEXT NOT NULL,
    task_type TEXT NOT NULL,
    status TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT '{}',
    started_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    ended_at REAL,
    stop_reason TEXT,
    stop_limit TEXT,
    turns INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    active_seconds REAL NOT NULL DEFAULT 0,
    waiting_seconds REAL NOT NULL DEFAULT 0,
    trace_id TEXT,
    note TEXT NOT NULL DEFAULT '',
    summary TEXT NOT NULL DEFAULT '',
    output TEXT NOT NULL DEFAULT '',
    verified INTEGER NOT NULL DEFAULT 0,
    error_type TEXT,
    segments INTEGER NOT NULL DEFAULT 0,
    checkpoints INTEGER NOT NULL DEFAULT 0,
    question TEXT,
    pending TEXT,
    deadline REAL,
    suspended_at REAL,
    interrupted INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    lease_until REAL,
    snapshot TEXT
, answer TEXT, approved INTEGER, answered_at REAL);
INSERT INTO endstate_runs VALUES('c-question','c-question','task of c-question','default','waiting','{}',1796562823.0076665877,1796562823.0094449519,NULL,'need_help',NULL,2,280,80,0.0020400000000000001465,0.001415999999999999941,0.0,NULL,'Which region: EU or US?','Stopped: need_help after 2 turns, 360 tokens, $0.0020. Tool calls: lookup x1. Last result (lookup): ACME: net 30','',0,NULL,1,1,'Which region: EU or US?',NULL,1796649223.0092885493,1796562823.0092885494,0,NULL,NULL,'{"agent": "c-question", "kind": "suspended", "run_id": "c-question", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.0013340370005607838, "cost_usd": 0.00204, "input_tokens": 280, "output_tokens": 80, "turns": 2, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-approval','c-approval','task of c-approval','default','waiting','{}',1796562823.0188999175,1796562823.0317287445,NULL,'need_help',NULL,1,120,50,0.0011100000000000000924,0.00090499999999999998848,0.0,NULL,'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?','Stopped: need_help after 1 turns, 170 tokens, $0.0011. Tool calls: lookup x1. Last result (lookup): ACME: net 30','',0,NULL,1,1,'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?','{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"}',1796649223.0316200256,1796562823.0316200256,0,NULL,NULL,'{"agent": "c-approval", "kind": "suspended", "run_id": "c-approval", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.0008543980002286844, "cost_usd": 0.00111, "input_tokens": 120, "output_tokens": 50, "turns": 1, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-deny','c-approval','task of c-deny','default','waiting','{}',1796562823.0398821831,1796562823.0475721359,NULL,'need_help',NULL,1,120,50,0.0011100000000000000924,0.00075799999999999999322,0.0,NULL,'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?','Stopped: need_help after 1 turns, 170 tokens, $0.0011. Tool calls: lookup x1. Last result (lookup): ACME: net 30','',0,NULL,1,1,'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?','{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"}',1796649223.0474641323,1796562823.0474641322,0,NULL,NULL,'{"agent": "c-approval", "kind": "suspended", "run_id": "c-deny", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.0007082209995132871, "cost_usd": 0.00111, "input_tokens": 120, "output_tokens": 50, "turns": 1, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-expired','c-expired','task of c-expired','default','waiting','{}',1796562823.0601787567,1796562823.0655298232,NULL,'need_help',NULL,1,120,40,0.00096000000000000002432,0.00026899999999999997914,0.0,NULL,'Ship today?','Stopped: need_help after 1 turns, 160 tokens, $0.0010. No tool was called.','',0,NULL,1,0,'Ship today?',NULL,1796562824.0654590129,1796562823.065459013,0,NULL,NULL,'{"agent": "c-expired", "kind": "suspended", "run_id": "c-expired", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.0002499900001566857, "cost_usd": 0.00096, "input_tokens": 120, "output_tokens": 40, "turns": 1, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-timeout','c-timeout','task of c-timeout','default','waiting','{}',1796562823.0714354515,1796562823.0790932177,NULL,'need_help',NULL,1,120,40,0.00096000000000000002432,0.00027099999999999997354,0.0,NULL,'Refund twice?','Stopped: need_help after 1 turns, 160 tokens, $0.0010. No tool was called.','',0,NULL,1,0,'Refund twice?',NULL,1796562824.0790207385,1796562823.0790207385,0,NULL,NULL,'{"agent": "c-timeout", "kind": "suspended", "run_id": "c-timeout", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.00025141900005110074, "cost_usd": 0.00096, "input_tokens": 120, "output_tokens": 40, "turns": 1, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-answered','c-followup','task of c-answered','default','running','{}',1796562823.0872352123,1796562824.2428188323,NULL,'need_help',NULL,1,120,40,0.00096000000000000002432,0.0045291520000318996608,1.1394610404968261718,NULL,'Which customer?','Stopped: need_help after 1 turns, 160 tokens, $0.0010. No tool was called.','',0,NULL,2,1,'Which customer?',NULL,1796649223.0934236049,1796562823.0934236049,0,'vm/4026531836:13895:1586b97b',1796562854.2428166866,'{"agent":"c-followup","kind":"checkpoint","run_id":"c-answered","segment":2,"span_id":null,"state":{},"task_type":"default","trace_id":null,"usage":{"active_seconds":0.0045291520000319,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1,"waiting_seconds":1.1394610404968262},"verifier_failures":[],"version":2}','DELTA',NULL,1796562824.2328846454);
INSERT INTO endstate_runs VALUES('c-cancelled','c-ledger','task of c-cancelled','default','cancelled','{}',1796562823.1080358028,1796562823.1163251399,NULL,'cancelled',NULL,1,120,50,0.0011100000000000000924,0.0014660000000000000721,0.0,NULL,'The caller cancelled the run.','Stopped: cancelled after 1 turns, 170 tokens, $0.0011. Tool calls: lookup x2. Last result (lookup): BETA: net 30','',0,NULL,1,2,NULL,NULL,NULL,NULL,1,NULL,NULL,'{"agent": "c-ledger", "kind": "cancelled", "run_id": "c-cancelled", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.001458079001167789, "cost_usd": 0.00111, "input_tokens": 120, "output_tokens": 50, "turns": 1, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-cut','c-slow','task of c-cut','default','cancelled','{}',1796562823.1240639686,1796562823.1313571929,NULL,'cancelled',NULL,1,120,40,0.00096000000000000002432,0.00051699999999999998994,0.0,NULL,'The run was cancelled.','Stopped: cancelled after 1 turns, 160 tokens, $0.0010. No tool was called.','',0,NULL,1,0,NULL,NULL,NULL,NULL,1,NULL,NULL,'{"agent": "c-slow", "kind": "cancelled", "run_id": "c-cut", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.0005076319994259393, "cost_usd": 0.00096, "input_tokens": 120, "output_tokens": 40, "turns": 1, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-done','c-ledger','task of c-done','default','finished','{}',1796562823.1409027575,1796562823.1477143764,1796562823.1477143764,'success',NULL,3,480,130,0.0033899999999999997843,0.0041830000000000000862,0.0,NULL,'','Stopped: success after 3 turns, 610 tokens, $0.0034. Tool calls: lookup x3. Last result (lookup): GAMMA: net 30','three customers looked up',0,NULL,1,3,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-limit','c-limit','task of c-limit','default','finished','{}',1796562823.1594879626,1796562823.167715311,1796562823.167715311,'limit','turns',1,120,40,0.00096000000000000002432,0.00091299999999999996609,0.0,NULL,'','Stopped: limit (turns budget used up) after 1 turns, 160 tokens, $0.0010. Tool calls: lookup x1. Last result (lookup): ACME: net 30','',0,NULL,1,1,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-gave-up','c-gave-up','task of c-gave-up','default','finished','{}',1796562823.1722359657,1796562823.178864479,1796562823.178864479,'gave_up',NULL,1,120,40,0.00096000000000000002432,0.00038400000000000000972,0.0,NULL,'no such customer','Stopped: gave_up after 1 turns, 160 tokens, $0.0010. No tool was called.','',0,NULL,1,0,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-audited','c-audited','task of c-audited','default','finished','{}',1796562823.1940615177,1796562823.2070195675,1796562823.2070195675,'success',NULL,1,120,40,0.00096000000000000002432,0.00020499999999999999559,0.0,NULL,'','Stopped: success after 1 turns, 160 tokens, $0.0010. No tool was called.','audited',0,NULL,1,0,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-crashed','c-ledger','task of c-crashed','default','running','{}',1796562823.6494467257,1796562823.6632401943,NULL,NULL,NULL,1,120,50,0.0011100000000000000924,0.011714567999661085195,0.0,NULL,'','','',0,NULL,1,1,NULL,NULL,NULL,NULL,0,'vm/4026531836:13874:10649fc2',1796562853.6632339954,'{"agent":"c-ledger","kind":"checkpoint","run_id":"c-crashed","segment":1,"span_id":null,"state":{},"task_type":"default","trace_id":null,"usage":{"active_seconds":0.011714567999661085,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1,"waiting_seconds":0.0},"verifier_failures":[],"version":2}',NULL,NULL,NULL);
CREATE TABLE endstate_entries (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
INSERT INTO endstate_entries VALUES('c-question',0,'{"text": "task of c-question", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-question',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 40, "parts": [{"arguments": {"customer": "ACME"}, "id": "toolu_001_0", "name": "lookup", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-question',2,'{"call_id": "toolu_001_0", "is_error": false, "ran": "lookup", "seen": "287229972613c8ed", "text": "ACME: net 30", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-question',3,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 160, "model": "scripted", "output_tokens": 40, "parts": [{"arguments": {"kind": "need_help", "note": "Which region: EU or US?"}, "id": "toolu_002_0", "name": "finish", "type": "call"}], "response_id": "msg_002", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-question',4,'{"suspension": {"call_id": "toolu_002_0", "deadline": 1796649223.0092885, "pending": null, "question": "Which region: EU or US?", "suspended_at": 1796562823.0092885}, "type": "suspended"}');
INSERT INTO endstate_entries VALUES('c-approval',0,'{"text": "task of c-approval", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-approval',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 50, "parts": [{"arguments": {"customer": "ACME"}, "id": "toolu_001_0", "name": "lookup", "type": "call"}, {"arguments": {"amount": 120.0, "customer": "ACME"}, "id": "toolu_001_1", "name": "send_invoice", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-approval',2,'{"call_id": "toolu_001_0", "is_error": false, "ran": "lookup", "seen": "287229972613c8ed", "text": "ACME: net 30", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-approval',3,'{"suspension": {"call_id": "toolu_001_1", "deadline": 1796649223.03162, "pending": {"arguments": {"amount": 120.0, "customer": "ACME"}, "name": "send_invoice", "tool_use_id": "toolu_001_1"}, "question": "Approve the call send_invoice({\"amount\": 120.0, \"customer\": \"ACME\"})?", "suspended_at": 1796562823.03162}, "type": "suspended"}');
INSERT INTO endstate_entries VALUES('c-deny',0,'{"text": "task of c-deny", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-deny',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 50, "parts": [{"arguments": {"customer": "ACME"}, "id": "toolu_001_0", "name": "lookup", "type": "call"}, {"arguments": {"amount": 120.0, "customer": "ACME"}, "id": "toolu_001_1", "name": "send_invoice", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-deny',2,'{"call_id": "toolu_001_0", "is_error": false, "ran": "lookup", "seen": "287229972613c8ed", "text": "ACME: net 30", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-deny',3,'{"suspension": {"call_id": "toolu_001_1", "deadline": 1796649223.0474641, "pending": {"arguments": {"amount": 120.0, "customer": "ACME"}, "name": "send_invoice", "tool_use_id": "toolu_001_1"}, "question": "Approve the call send_invoice({\"amount\": 120.0, \"customer\": \"ACME\"})?", "suspended_at": 1796562823.0474641}, "type": "suspended"}');
INSERT INTO endstate_entries VALUES('c-expired',0,'{"text": "task of c-expired", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-expired',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 40, "parts": [{"arguments": {"kind": "need_help", "note": "Ship today?"}, "id": "toolu_001_0", "name": "finish", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-expired',2,'{"suspension": {"call_id": "toolu_001_0", "deadline": 1796562824.065459, "pending": null, "question": "Ship today?", "suspended_at": 1796562823.065459}, "type": "suspended"}');
INSERT INTO endstate_entries VALUES('c-timeout',0,'{"text": "task of c-timeout", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-timeout',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 40, "parts": [{"arguments": {"kind": "need_help", "note": "Refund twice?"}, "id": "toolu_001_0", "name": "finish", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-timeout',2,'{"suspension": {"call_id": "toolu_001_0", "deadline": 1796562824.0790207, "pending": null, "question": "Refund twice?", "suspended_at": 1796562823.0790207}, "type": "suspended"}');
INSERT INTO endstate_entries VALUES('c-answered',0,'{"text": "task of c-answered", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-answered',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 40, "parts": [{"arguments": {"kind": "need_help", "note": "Which customer?"}, "id": "toolu_001_0", "name": "finish", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-answered',2,'{"suspension": {"call_id": "toolu_001_0", "deadline": 1796649223.0934236, "pending": null, "question": "Which customer?", "suspended_at": 1796562823.0934236}, "type": "suspended"}');
INSERT INTO endstate_entries VALUES('c-cancelled',0,'{"text": "task of c-cancelled", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-cancelled',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 50, "parts": [{"arguments": {"customer": "ACME"}, "id": "toolu_001_0", "name": "lookup", "type": "call"}, {"arguments": {"customer": "BETA"}, "id": "toolu_001_1", "name": "lookup", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-cancelled',2,'{"call_id": "toolu_001_0", "is_error": false, "ran": "lookup", "seen": "287229972613c8ed", "text": "ACME: net 30", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-cancelled',3,'{"call_id": "toolu_001_1", "is_error": false, "ran": "lookup", "seen": "cd78250ad4e913d7", "text": "BETA: net 30", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-cancelled',4,'{"limit": null, "note": "The caller cancelled the run.", "reason": "cancelled", "type": "stopped"}');
INSERT INTO endstate_entries VALUES('c-cut',0,'{"text": "task of c-cut", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-cut',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 40, "parts": [{"arguments": {"customer": "SLOW"}, "id": "toolu_001_0", "name": "lookup", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-cut',2,'{"call_id": "toolu_001_0", "is_error": true, "ran": "lookup", "seen": "", "text": "Outcome unknown: the run was stopped while this call ran, so it may or may not have taken effect. Check before you call it again.", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-cut',3,'{"limit": null, "note": "The run was cancelled.", "reason": "cancelled", "type": "stopped"}');
INSERT INTO endstate_entries VALUES('c-done',0,'{"text": "task of c-done", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-done',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 50, "parts": [{"arguments": {"customer": "ACME"}, "id": "toolu_001_0", "name": "lookup", "type": "call"}, {"arguments": {"customer": "BETA"}, "id": "toolu_001_1", "name": "lookup", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-done',2,'{"call_id": "toolu_001_0", "is_error": false, "ran": "lookup", "seen": "287229972613c8ed", "text": "ACME: net 30", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-done',3,'{"call_id": "toolu_001_1", "is_error": false, "ran": "lookup", "seen": "cd78250ad4e913d7", "text": "BETA: net 30", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-done',4,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 160, "model": "scripted", "output_tokens": 40, "parts": [{"arguments": {"customer": "GAMMA"}, "id": "toolu_002_0", "name": "lookup", "type": "call"}], "response_id": "msg_002", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-done',5,'{"call_id": "toolu_002_0", "is_error": false, "ran": "lookup", "seen": "6c7d3ae026a6a7ec", "text": "GAMMA: net 30", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-limit',0,'{"text": "task of c-limit", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-limit',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 40, "parts": [{"arguments": {"customer": "ACME"}, "id": "toolu_001_0", "name": "lookup", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-limit',2,'{"call_id": "toolu_001_0", "is_error": false, "ran": "lookup", "seen": "287229972613c8ed", "text": "ACME: net 30", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-crashed',0,'{"text": "task of c-crashed", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-crashed',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 50, "parts": [{"arguments": {"customer": "ACME"}, "id": "toolu_001_0", "name": "lookup", "type": "call"}, {"arguments": {"customer": "BETA"}, "id": "toolu_001_1", "name": "lookup", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-crashed',2,'{"call_id": "toolu_001_0", "is_error": false, "ran": "lookup", "seen": "287229972613c8ed", "text": "ACME: net 30", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-answered',3,'{"at": 1796562824.2328846, "by": "person", "reply": {"text": "DELTA", "type": "answer"}, "type": "answered"}');
INSERT INTO endstate_entries VALUES('c-answered',4,'{"call_id": "toolu_001_0", "is_error": false, "ran": null, "seen": "", "text": "Answer from a person: DELTA", "type": "result"}');
CREATE INDEX endstate_runs_status ON endstate_runs (status, deadline);
CREATE INDEX endstate_runs_started ON endstate_runs (started_at);
COMMIT;
