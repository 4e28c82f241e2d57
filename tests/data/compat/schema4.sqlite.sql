PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE endstate_schema (version INTEGER NOT NULL, applied_at REAL);
INSERT INTO endstate_schema VALUES(1,1796560920.8372786045);
INSERT INTO endstate_schema VALUES(2,1796560920.8374576568);
INSERT INTO endstate_schema VALUES(3,1796560920.8375325203);
INSERT INTO endstate_schema VALUES(4,1796560920.8376021384);
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
INSERT INTO endstate_runs VALUES('c-question','c-question','task of c-question','default','waiting','{}',1796560920.8515436649,1796560920.8556458949,NULL,'need_help',NULL,2,280,80,0.0020400000000000001465,0.0037710000000000000464,0.0,NULL,'Which region: EU or US?','Stopped: need_help after 2 turns, 360 tokens, $0.0020. Tool calls: lookup x1. Last result (lookup): ACME: net 30','',0,NULL,1,1,'Which region: EU or US?',NULL,1796647320.8555312156,1796560920.8555312156,0,NULL,NULL,'{"agent": "c-question", "kind": "suspended", "run_id": "c-question", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.0037088199987920234, "cost_usd": 0.00204, "input_tokens": 280, "output_tokens": 80, "turns": 2, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-approval','c-approval','task of c-approval','default','waiting','{}',1796560920.8802382945,1796560920.8875932693,NULL,'need_help',NULL,1,120,50,0.0011100000000000000924,0.00074399999999999997819,0.0,NULL,'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?','Stopped: need_help after 1 turns, 170 tokens, $0.0011. Tool calls: lookup x1. Last result (lookup): ACME: net 30','',0,NULL,1,1,'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?','{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"}',1796647320.887493372,1796560920.8874933719,0,NULL,NULL,'{"agent": "c-approval", "kind": "suspended", "run_id": "c-approval", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.0006984030005696695, "cost_usd": 0.00111, "input_tokens": 120, "output_tokens": 50, "turns": 1, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-deny','c-approval','task of c-deny','default','waiting','{}',1796560920.9040305614,1796560920.9197616576,NULL,'need_help',NULL,1,120,50,0.0011100000000000000924,0.00087900000000000000702,0.0,NULL,'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?','Stopped: need_help after 1 turns, 170 tokens, $0.0011. Tool calls: lookup x1. Last result (lookup): ACME: net 30','',0,NULL,1,1,'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?','{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"}',1796647320.9196646213,1796560920.9196646213,0,NULL,NULL,'{"agent": "c-approval", "kind": "suspended", "run_id": "c-deny", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.0008353240009455476, "cost_usd": 0.00111, "input_tokens": 120, "output_tokens": 50, "turns": 1, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-expired','c-expired','task of c-expired','default','waiting','{}',1796560920.9359509944,1796560920.9392209052,NULL,'need_help',NULL,1,120,40,0.00096000000000000002432,0.00027500000000000001656,0.0,NULL,'Ship today?','Stopped: need_help after 1 turns, 160 tokens, $0.0010. No tool was called.','',0,NULL,1,0,'Ship today?',NULL,1796560921.9391560554,1796560920.9391560554,0,NULL,NULL,'{"agent": "c-expired", "kind": "suspended", "run_id": "c-expired", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.000256690000242088, "cost_usd": 0.00096, "input_tokens": 120, "output_tokens": 40, "turns": 1, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-timeout','c-timeout','task of c-timeout','default','waiting','{}',1796560920.9601171017,1796560920.9670872688,NULL,'need_help',NULL,1,120,40,0.00096000000000000002432,0.0002480000000000000108,0.0,NULL,'Refund twice?','Stopped: need_help after 1 turns, 160 tokens, $0.0010. No tool was called.','',0,NULL,1,0,'Refund twice?',NULL,1796560921.9670200347,1796560920.9670200347,0,NULL,NULL,'{"agent": "c-timeout", "kind": "suspended", "run_id": "c-timeout", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.0002238630004285369, "cost_usd": 0.00096, "input_tokens": 120, "output_tokens": 40, "turns": 1, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-answered','c-followup','task of c-answered','default','running','{}',1796560920.9839489459,1796560921.9211888312,NULL,'need_help',NULL,1,120,40,0.00096000000000000002432,0.00030918399897927884012,0.9291973114013671875,NULL,'Which customer?','Stopped: need_help after 1 turns, 160 tokens, $0.0010. No tool was called.','',0,NULL,2,1,'Which customer?',NULL,1796647320.9909677504,1796560920.9909677505,0,'vm/4026531836:1085:60bd0e85',1796560951.9211876392,'{"agent":"c-followup","kind":"checkpoint","run_id":"c-answered","segment":2,"span_id":null,"state":{},"task_type":"default","trace_id":null,"usage":{"active_seconds":0.00030918399897927884,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1,"waiting_seconds":0.9291973114013672},"verifier_failures":[],"version":2}','DELTA',NULL,1796560921.920165062);
INSERT INTO endstate_runs VALUES('c-cancelled','c-ledger','task of c-cancelled','default','cancelled','{}',1796560921.0118834972,1796560921.0198147297,NULL,'cancelled',NULL,1,120,50,0.0011100000000000000924,0.0010150000000000000601,0.0,NULL,'The caller cancelled the run.','Stopped: cancelled after 1 turns, 170 tokens, $0.0011. Tool calls: lookup x2. Last result (lookup): BETA: net 30','',0,NULL,1,2,NULL,NULL,NULL,NULL,1,NULL,NULL,'{"agent": "c-ledger", "kind": "cancelled", "run_id": "c-cancelled", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.00100847999965481, "cost_usd": 0.00111, "input_tokens": 120, "output_tokens": 50, "turns": 1, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-cut','c-slow','task of c-cut','default','cancelled','{}',1796560921.0376346111,1796560921.0474135876,NULL,'cancelled',NULL,1,120,40,0.00096000000000000002432,0.00049499999999999999729,0.0,NULL,'The run was cancelled.','Stopped: cancelled after 1 turns, 160 tokens, $0.0010. No tool was called.','',0,NULL,1,0,NULL,NULL,NULL,NULL,1,NULL,NULL,'{"agent": "c-slow", "kind": "cancelled", "run_id": "c-cut", "segment": 1, "span_id": null, "state": {}, "task_type": "default", "trace_id": null, "usage": {"active_seconds": 0.0004846090014325455, "cost_usd": 0.00096, "input_tokens": 120, "output_tokens": 40, "turns": 1, "waiting_seconds": 0.0}, "verifier_failures": [], "version": 2}',NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-done','c-ledger','task of c-done','default','finished','{}',1796560921.0637862682,1796560921.0722384452,1796560921.0722384452,'success',NULL,3,480,130,0.0033899999999999997843,0.0014480000000000000683,0.0,NULL,'','Stopped: success after 3 turns, 610 tokens, $0.0034. Tool calls: lookup x3. Last result (lookup): GAMMA: net 30','three customers looked up',0,NULL,1,3,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-limit','c-limit','task of c-limit','default','finished','{}',1796560921.0860776901,1796560921.1078581809,1796560921.1078581809,'limit','turns',1,120,40,0.00096000000000000002432,0.00096000000000000002432,0.0,NULL,'','Stopped: limit (turns budget used up) after 1 turns, 160 tokens, $0.0010. Tool calls: lookup x1. Last result (lookup): ACME: net 30','',0,NULL,1,1,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-gave-up','c-gave-up','task of c-gave-up','default','finished','{}',1796560921.1238982677,1796560921.1311163902,1796560921.1311163902,'gave_up',NULL,1,120,40,0.00096000000000000002432,0.00031199999999999999435,0.0,NULL,'no such customer','Stopped: gave_up after 1 turns, 160 tokens, $0.0010. No tool was called.','',0,NULL,1,0,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO endstate_runs VALUES('c-crashed','c-ledger','task of c-crashed','default','running','{}',1796560921.5303459167,1796560921.5396249293,NULL,NULL,NULL,1,120,50,0.0011100000000000000924,0.00078472799941664561629,0.0,NULL,'','','',0,NULL,1,1,NULL,NULL,NULL,NULL,0,'vm/4026531836:1065:c681a1af',1796560951.5396234989,'{"agent":"c-ledger","kind":"checkpoint","run_id":"c-crashed","segment":1,"span_id":null,"state":{},"task_type":"default","trace_id":null,"usage":{"active_seconds":0.0007847279994166456,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1,"waiting_seconds":0.0},"verifier_failures":[],"version":2}',NULL,NULL,NULL);
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
INSERT INTO endstate_entries VALUES('c-question',4,'{"suspension": {"call_id": "toolu_002_0", "deadline": 1796647320.8555312, "pending": null, "question": "Which region: EU or US?", "suspended_at": 1796560920.8555312}, "type": "suspended"}');
INSERT INTO endstate_entries VALUES('c-approval',0,'{"text": "task of c-approval", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-approval',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 50, "parts": [{"arguments": {"customer": "ACME"}, "id": "toolu_001_0", "name": "lookup", "type": "call"}, {"arguments": {"amount": 120.0, "customer": "ACME"}, "id": "toolu_001_1", "name": "send_invoice", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-approval',2,'{"call_id": "toolu_001_0", "is_error": false, "ran": "lookup", "seen": "287229972613c8ed", "text": "ACME: net 30", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-approval',3,'{"suspension": {"call_id": "toolu_001_1", "deadline": 1796647320.8874934, "pending": {"arguments": {"amount": 120.0, "customer": "ACME"}, "name": "send_invoice", "tool_use_id": "toolu_001_1"}, "question": "Approve the call send_invoice({\"amount\": 120.0, \"customer\": \"ACME\"})?", "suspended_at": 1796560920.8874934}, "type": "suspended"}');
INSERT INTO endstate_entries VALUES('c-deny',0,'{"text": "task of c-deny", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-deny',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 50, "parts": [{"arguments": {"customer": "ACME"}, "id": "toolu_001_0", "name": "lookup", "type": "call"}, {"arguments": {"amount": 120.0, "customer": "ACME"}, "id": "toolu_001_1", "name": "send_invoice", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-deny',2,'{"call_id": "toolu_001_0", "is_error": false, "ran": "lookup", "seen": "287229972613c8ed", "text": "ACME: net 30", "type": "result"}');
INSERT INTO endstate_entries VALUES('c-deny',3,'{"suspension": {"call_id": "toolu_001_1", "deadline": 1796647320.9196646, "pending": {"arguments": {"amount": 120.0, "customer": "ACME"}, "name": "send_invoice", "tool_use_id": "toolu_001_1"}, "question": "Approve the call send_invoice({\"amount\": 120.0, \"customer\": \"ACME\"})?", "suspended_at": 1796560920.9196646}, "type": "suspended"}');
INSERT INTO endstate_entries VALUES('c-expired',0,'{"text": "task of c-expired", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-expired',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 40, "parts": [{"arguments": {"kind": "need_help", "note": "Ship today?"}, "id": "toolu_001_0", "name": "finish", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-expired',2,'{"suspension": {"call_id": "toolu_001_0", "deadline": 1796560921.939156, "pending": null, "question": "Ship today?", "suspended_at": 1796560920.939156}, "type": "suspended"}');
INSERT INTO endstate_entries VALUES('c-timeout',0,'{"text": "task of c-timeout", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-timeout',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 40, "parts": [{"arguments": {"kind": "need_help", "note": "Refund twice?"}, "id": "toolu_001_0", "name": "finish", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-timeout',2,'{"suspension": {"call_id": "toolu_001_0", "deadline": 1796560921.96702, "pending": null, "question": "Refund twice?", "suspended_at": 1796560920.96702}, "type": "suspended"}');
INSERT INTO endstate_entries VALUES('c-answered',0,'{"text": "task of c-answered", "type": "task"}');
INSERT INTO endstate_entries VALUES('c-answered',1,'{"cache_read_tokens": 0, "cache_write_tokens": 0, "input_tokens": 120, "model": "scripted", "output_tokens": 40, "parts": [{"arguments": {"kind": "need_help", "note": "Which customer?"}, "id": "toolu_001_0", "name": "finish", "type": "call"}], "response_id": "msg_001", "stop_reason": "tool_use", "type": "reply"}');
INSERT INTO endstate_entries VALUES('c-answered',2,'{"suspension": {"call_id": "toolu_001_0", "deadline": 1796647320.9909678, "pending": null, "question": "Which customer?", "suspended_at": 1796560920.9909678}, "type": "suspended"}');
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
INSERT INTO endstate_entries VALUES('c-answered',3,'{"at": 1796560921.920165, "by": "person", "reply": {"text": "DELTA", "type": "answer"}, "type": "answered"}');
INSERT INTO endstate_entries VALUES('c-answered',4,'{"call_id": "toolu_001_0", "is_error": false, "ran": null, "seen": "", "text": "Answer from a person: DELTA", "type": "result"}');
CREATE INDEX endstate_runs_status ON endstate_runs (status, deadline);
CREATE INDEX endstate_runs_started ON endstate_runs (started_at);
COMMIT;
