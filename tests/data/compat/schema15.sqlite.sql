PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE endstate_schema (version INTEGER NOT NULL, applied_at REAL);
INSERT INTO endstate_schema VALUES(1,1796562893.4000778197);
INSERT INTO endstate_schema VALUES(2,1796562893.4003603458);
INSERT INTO endstate_schema VALUES(3,1796562893.4032979012);
INSERT INTO endstate_schema VALUES(4,1796562893.4034581184);
INSERT INTO endstate_schema VALUES(5,1796562893.4036438464);
INSERT INTO endstate_schema VALUES(6,1796562893.4037401676);
INSERT INTO endstate_schema VALUES(7,1796562893.4041714668);
INSERT INTO endstate_schema VALUES(8,1796562893.4043052196);
INSERT INTO endstate_schema VALUES(9,1796562893.4048912525);
INSERT INTO endstate_schema VALUES(10,1796562893.4049990176);
INSERT INTO endstate_schema VALUES(11,1796562893.405167818);
INSERT INTO endstate_schema VALUES(12,1796562893.4053299427);
INSERT INTO endstate_schema VALUES(13,1796562893.4055011271);
INSERT INTO endstate_schema VALUES(14,1796562893.4060840606);
INSERT INTO endstate_schema VALUES(15,1796562893.4062511921);
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
, answer TEXT, approved INTEGER, answered_at REAL, cost_known INTEGER NOT NULL DEFAULT 1, cache_read_tokens INTEGER NOT NULL DEFAULT 0, cache_write_tokens INTEGER NOT NULL DEFAULT 0, refused TEXT, head_version INTEGER, lease_seconds REAL, last_answer_by TEXT, last_answer_at REAL, last_answer_kind TEXT, last_answer TEXT, journal_length INTEGER);
INSERT INTO endstate_runs VALUES('c-question','c-question','task of c-question','default','waiting','{}',1796562893.4468758106,1796562893.449821949,NULL,'need_help',NULL,2,280,80,0.0020400000000000001465,0.002037999999999999881,0.0,NULL,'Which region: EU or US?','Stopped: need_help after 2 turns, 360 tokens, $0.0020. Tool calls: lookup x1. Last result (lookup): ACME: net 30','',0,NULL,1,1,'Which region: EU or US?',NULL,1796649293.4489672184,1796562893.4489672183,0,NULL,NULL,'{"agent":"c-question","kind":"suspended","run_id":"c-question","segment":1,"task_type":"default","usage":{"active_seconds":0.0019951720005337847,"cost_usd":0.00204,"input_tokens":280,"output_tokens":80,"turns":2},"version":2}',NULL,NULL,NULL,1,0,0,NULL,2,30.0,NULL,NULL,NULL,NULL,5);
INSERT INTO endstate_runs VALUES('c-approval','c-approval','task of c-approval','default','waiting','{}',1796562893.4728910923,1796562893.4946990013,NULL,'need_help',NULL,1,120,50,0.0011100000000000000924,0.0035179999999999998598,0.0,NULL,'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?','Stopped: need_help after 1 turn, 170 tokens, $0.0011. Tool calls: lookup x1. Last result (lookup): ACME: net 30','',0,NULL,1,1,'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?','{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"}',1796649293.4912576675,1796562893.4912576675,0,NULL,NULL,'{"agent":"c-approval","kind":"suspended","run_id":"c-approval","segment":1,"task_type":"default","usage":{"active_seconds":0.003476953999779653,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1},"version":2}',NULL,NULL,NULL,1,0,0,NULL,2,30.0,NULL,NULL,NULL,NULL,4);
INSERT INTO endstate_runs VALUES('c-deny','c-approval','task of c-deny','default','waiting','{}',1796562893.5570764541,1796562893.6107814312,NULL,'need_help',NULL,1,120,50,0.0011100000000000000924,0.022405000000000001303,0.0,NULL,'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?','Stopped: need_help after 1 turn, 170 tokens, $0.0011. Tool calls: lookup x1. Last result (lookup): ACME: net 30','',0,NULL,1,1,'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?','{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"}',1796649293.6096422672,1796562893.6096422673,0,NULL,NULL,'{"agent":"c-approval","kind":"suspended","run_id":"c-deny","segment":1,"task_type":"default","usage":{"active_seconds":0.022363612999470206,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1},"version":2}',NULL,NULL,NULL,1,0,0,NULL,2,30.0,NULL,NULL,NULL,NULL,4);
INSERT INTO endstate_runs VALUES('c-expired','c-expired','task of c-expired','default','waiting','{}',1796562893.621726036,1796562893.6402444838,NULL,'need_help',NULL,1,120,40,0.00096000000000000002432,0.00090799999999999995298,0.0,NULL,'Ship today?','Stopped: need_help after 1 turn, 160 tokens, $0.0010. No tool was called.','',0,NULL,1,0,'Ship today?',NULL,1796562894.6397926807,1796562893.6397926807,0,NULL,NULL,'{"agent":"c-expired","kind":"suspended","run_id":"c-expired","segment":1,"task_type":"default","usage":{"active_seconds":0.0008794120003585704,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}',NULL,NULL,NULL,1,0,0,NULL,2,30.0,NULL,NULL,NULL,NULL,3);
INSERT INTO endstate_runs VALUES('c-timeout','c-timeout','task of c-timeout','default','waiting','{}',1796562893.6649789809,1796562893.6948685646,NULL,'need_help',NULL,1,120,40,0.00096000000000000002432,0.00077200000000000000826,0.0,NULL,'Refund twice?','Stopped: need_help after 1 turn, 160 tokens, $0.0010. No tool was called.','',0,NULL,1,0,'Refund twice?',NULL,1796562894.6922402382,1796562893.6922402381,0,NULL,NULL,'{"agent":"c-timeout","kind":"suspended","run_id":"c-timeout","segment":1,"task_type":"default","usage":{"active_seconds":0.0007404070001939544,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}',NULL,NULL,NULL,1,0,0,NULL,2,30.0,NULL,NULL,NULL,NULL,3);
INSERT INTO endstate_runs VALUES('c-answered','c-followup','task of c-answered','default','running','{}',1796562893.7383868693,1796562896.2622241974,NULL,'need_help',NULL,1,120,40,0.00096000000000000002432,0.00061610399825440254062,2.4690194129943847656,NULL,'Which customer?','Stopped: need_help after 1 turn, 160 tokens, $0.0010. No tool was called.','',0,NULL,2,1,'Which customer?',NULL,1796649293.7917735576,1796562893.7917735576,0,'vm/4026531836/c77404778d95:17141:c75be587',1796562926.2619929313,'{"agent":"c-followup","kind":"checkpoint","run_id":"c-answered","segment":2,"task_type":"default","usage":{"active_seconds":0.0006161039982544025,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1,"waiting_seconds":2.4690194129943848},"version":2}','DELTA',NULL,1796562896.2607929706,1,0,0,NULL,2,30.0,NULL,1796562896.2607929706,'answer','DELTA',5);
INSERT INTO endstate_runs VALUES('c-cancelled','c-ledger','task of c-cancelled','default','cancelled','{}',1796562893.8176550865,1796562893.8928856849,NULL,'cancelled',NULL,1,120,50,0.0011100000000000000924,0.01695800000000000085,0.0,NULL,'The caller cancelled the run.','Stopped: cancelled after 1 turn, 170 tokens, $0.0011. Tool calls: lookup x2. Last result (lookup): BETA: net 30','',0,NULL,1,2,NULL,NULL,NULL,NULL,1,NULL,NULL,'{"agent":"c-ledger","kind":"cancelled","run_id":"c-cancelled","segment":1,"task_type":"default","usage":{"active_seconds":0.016952608999417862,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1},"version":2}',NULL,NULL,NULL,1,0,0,NULL,2,30.0,NULL,NULL,NULL,NULL,5);
INSERT INTO endstate_runs VALUES('c-cut','c-slow','task of c-cut','default','cancelled','{}',1796562893.9978377818,1796562894.026282072,NULL,'cancelled',NULL,1,120,40,0.00096000000000000002432,0.0010599999999999999613,0.0,NULL,'The run was cancelled.','Stopped: cancelled after 1 turn, 160 tokens, $0.0010. No tool was called.','',0,NULL,1,0,NULL,NULL,NULL,NULL,1,NULL,NULL,'{"agent":"c-slow","kind":"cancelled","run_id":"c-cut","segment":1,"task_type":"default","usage":{"active_seconds":0.0010507980005058926,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}',NULL,NULL,NULL,1,0,0,NULL,2,30.0,NULL,NULL,NULL,NULL,4);
INSERT INTO endstate_runs VALUES('c-done','c-ledger','task of c-done','default','finished','{}',1796562894.0465974807,1796562894.0679121017,1796562894.0679121017,'success',NULL,3,480,130,0.0033899999999999997843,0.011853999999999999953,0.0,NULL,'','Stopped: success after 3 turns, 610 tokens, $0.0034. Tool calls: lookup x3. Last result (lookup): GAMMA: net 30','three customers looked up',0,NULL,1,3,NULL,NULL,NULL,NULL,0,NULL,NULL,'{"agent":"c-ledger","kind":"finished","run_id":"c-done","segment":1,"task_type":"default","usage":{"active_seconds":0.011796819000664982,"cost_usd":0.00339,"input_tokens":480,"output_tokens":130,"turns":3},"version":2}',NULL,NULL,NULL,1,0,0,NULL,2,30.0,NULL,NULL,NULL,NULL,8);
INSERT INTO endstate_runs VALUES('c-limit','c-limit','task of c-limit','default','finished','{}',1796562894.0997042656,1796562894.1329329013,1796562894.1329329013,'limit','turns',1,120,40,0.00096000000000000002432,0.0016199999999999999122,0.0,NULL,'','Stopped: limit (turns budget used up) after 1 turn, 160 tokens, $0.0010. Tool calls: lookup x1. Last result (lookup): ACME: net 30','',0,NULL,1,1,NULL,NULL,NULL,NULL,0,NULL,NULL,'{"agent":"c-limit","kind":"limited","run_id":"c-limit","segment":1,"task_type":"default","usage":{"active_seconds":0.0015615619995514862,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}',NULL,NULL,NULL,1,0,0,NULL,2,30.0,NULL,NULL,NULL,NULL,4);
INSERT INTO endstate_runs VALUES('c-gave-up','c-gave-up','task of c-gave-up','default','finished','{}',1796562894.230385065,1796562894.2468438149,1796562894.2468438149,'gave_up',NULL,1,120,40,0.00096000000000000002432,0.00039800000000000002476,0.0,NULL,'no such customer','Stopped: gave_up after 1 turn, 160 tokens, $0.0010. No tool was called.','',0,NULL,1,0,NULL,NULL,NULL,NULL,0,NULL,NULL,'{"agent":"c-gave-up","kind":"finished","run_id":"c-gave-up","segment":1,"task_type":"default","usage":{"active_seconds":0.00034174000029452145,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}',NULL,NULL,NULL,1,0,0,NULL,2,30.0,NULL,NULL,NULL,NULL,3);
INSERT INTO endstate_runs VALUES('c-audited','c-audited','task of c-audited','default','finished','{}',1796562894.2857232093,1796562894.2937717437,1796562894.2937717437,'success',NULL,1,120,40,0.00096000000000000002432,0.00065600000000000000758,0.0,NULL,'','Stopped: success after 1 turn, 160 tokens, $0.0010. No tool was called.','audited',0,NULL,1,0,NULL,NULL,NULL,NULL,0,NULL,NULL,'{"agent":"c-audited","kind":"finished","run_id":"c-audited","segment":1,"task_type":"default","usage":{"active_seconds":0.0005216289991949452,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}',NULL,NULL,NULL,1,0,0,NULL,2,30.0,NULL,NULL,NULL,NULL,3);
INSERT INTO endstate_runs VALUES('c-crashed','c-ledger','task of c-crashed','default','running','{}',1796562895.2809183597,1796562895.2961993217,NULL,NULL,NULL,1,120,50,0.0011100000000000000924,0.0010414549997221911326,0.0,NULL,'','','',0,NULL,1,1,NULL,NULL,NULL,NULL,0,'vm/4026531836/c77404778d95:17112:eda03e5d',1796562925.2959954738,'{"agent":"c-ledger","kind":"checkpoint","run_id":"c-crashed","segment":1,"task_type":"default","usage":{"active_seconds":0.0010414549997221911,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1},"version":2}',NULL,NULL,NULL,1,0,0,NULL,2,30.0,NULL,NULL,NULL,NULL,3);
CREATE TABLE endstate_reviews (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    task_type TEXT NOT NULL,
    label TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    labelled_at REAL NOT NULL
, labelled_by TEXT NOT NULL DEFAULT '');
CREATE TABLE endstate_audits (
    run_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    task_type TEXT NOT NULL,
    due_at DOUBLE PRECISION NOT NULL,
    outcome TEXT,
    note TEXT NOT NULL DEFAULT '',
    checked_at DOUBLE PRECISION
);
INSERT INTO endstate_audits VALUES('c-audited','c-audited','default',1796562954.2986032963,NULL,'',NULL);
CREATE TABLE IF NOT EXISTS "endstate_entries" (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO endstate_entries VALUES('c-answered',0,'{"text":"task of c-answered","type":"task"}');
INSERT INTO endstate_entries VALUES('c-answered',1,'{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"need_help","note":"Which customer?"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-answered',2,'{"suspension":{"call_id":"toolu_001_0","deadline":1796649293.7917736,"question":"Which customer?","suspended_at":1796562893.7917736},"type":"suspended"}');
INSERT INTO endstate_entries VALUES('c-answered',3,'{"at":1796562896.260793,"by":"person","reply":{"text":"DELTA","type":"answer"},"type":"answered"}');
INSERT INTO endstate_entries VALUES('c-answered',4,'{"call_id":"toolu_001_0","text":"Answer from a person: DELTA","type":"result"}');
INSERT INTO endstate_entries VALUES('c-approval',0,'{"text":"task of c-approval","type":"task"}');
INSERT INTO endstate_entries VALUES('c-approval',1,'{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"amount":120.0,"customer":"ACME"},"id":"toolu_001_1","name":"send_invoice","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-approval',2,'{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO endstate_entries VALUES('c-approval',3,'{"suspension":{"call_id":"toolu_001_1","deadline":1796649293.4912577,"pending":{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"},"question":"Approve the call send_invoice({\"amount\": 120.0, \"customer\": \"ACME\"})?","suspended_at":1796562893.4912577},"type":"suspended"}');
INSERT INTO endstate_entries VALUES('c-audited',0,'{"text":"task of c-audited","type":"task"}');
INSERT INTO endstate_entries VALUES('c-audited',1,'{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"done","note":"audited"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-audited',2,'{"at":1796562894.2921119,"reason":"success","type":"stopped"}');
INSERT INTO endstate_entries VALUES('c-cancelled',0,'{"text":"task of c-cancelled","type":"task"}');
INSERT INTO endstate_entries VALUES('c-cancelled',1,'{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"customer":"BETA"},"id":"toolu_001_1","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-cancelled',2,'{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO endstate_entries VALUES('c-cancelled',3,'{"call_id":"toolu_001_1","ran":"lookup","seen":"cd78250ad4e913d7","text":"BETA: net 30","type":"result"}');
INSERT INTO endstate_entries VALUES('c-cancelled',4,'{"at":1796562893.8924537,"note":"The caller cancelled the run.","reason":"cancelled","type":"stopped"}');
INSERT INTO endstate_entries VALUES('c-crashed',0,'{"text":"task of c-crashed","type":"task"}');
INSERT INTO endstate_entries VALUES('c-crashed',1,'{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"customer":"BETA"},"id":"toolu_001_1","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-crashed',2,'{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO endstate_entries VALUES('c-cut',0,'{"text":"task of c-cut","type":"task"}');
INSERT INTO endstate_entries VALUES('c-cut',1,'{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"customer":"SLOW"},"id":"toolu_001_0","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-cut',2,'{"call_id":"toolu_001_0","is_error":true,"ran":"lookup","text":"Outcome unknown: the run was stopped while this call ran, so it may or may not have taken effect. Check before you call it again.","type":"result"}');
INSERT INTO endstate_entries VALUES('c-cut',3,'{"at":1796562894.0260208,"note":"The run was cancelled.","reason":"cancelled","type":"stopped"}');
INSERT INTO endstate_entries VALUES('c-deny',0,'{"text":"task of c-deny","type":"task"}');
INSERT INTO endstate_entries VALUES('c-deny',1,'{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"amount":120.0,"customer":"ACME"},"id":"toolu_001_1","name":"send_invoice","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-deny',2,'{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO endstate_entries VALUES('c-deny',3,'{"suspension":{"call_id":"toolu_001_1","deadline":1796649293.6096423,"pending":{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"},"question":"Approve the call send_invoice({\"amount\": 120.0, \"customer\": \"ACME\"})?","suspended_at":1796562893.6096423},"type":"suspended"}');
INSERT INTO endstate_entries VALUES('c-done',0,'{"text":"task of c-done","type":"task"}');
INSERT INTO endstate_entries VALUES('c-done',1,'{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"customer":"BETA"},"id":"toolu_001_1","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-done',2,'{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO endstate_entries VALUES('c-done',3,'{"call_id":"toolu_001_1","ran":"lookup","seen":"cd78250ad4e913d7","text":"BETA: net 30","type":"result"}');
INSERT INTO endstate_entries VALUES('c-done',4,'{"input_tokens":160,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"customer":"GAMMA"},"id":"toolu_002_0","name":"lookup","type":"call"}],"response_id":"msg_002","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-done',5,'{"call_id":"toolu_002_0","ran":"lookup","seen":"6c7d3ae026a6a7ec","text":"GAMMA: net 30","type":"result"}');
INSERT INTO endstate_entries VALUES('c-done',6,'{"input_tokens":200,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"done","note":"three customers looked up"},"id":"toolu_003_0","name":"finish","type":"call"}],"response_id":"msg_003","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-done',7,'{"at":1796562894.0676618,"reason":"success","type":"stopped"}');
INSERT INTO endstate_entries VALUES('c-expired',0,'{"text":"task of c-expired","type":"task"}');
INSERT INTO endstate_entries VALUES('c-expired',1,'{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"need_help","note":"Ship today?"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-expired',2,'{"suspension":{"call_id":"toolu_001_0","deadline":1796562894.6397927,"question":"Ship today?","suspended_at":1796562893.6397927},"type":"suspended"}');
INSERT INTO endstate_entries VALUES('c-gave-up',0,'{"text":"task of c-gave-up","type":"task"}');
INSERT INTO endstate_entries VALUES('c-gave-up',1,'{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"give_up","note":"no such customer"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-gave-up',2,'{"at":1796562894.2454994,"note":"no such customer","reason":"gave_up","type":"stopped"}');
INSERT INTO endstate_entries VALUES('c-limit',0,'{"text":"task of c-limit","type":"task"}');
INSERT INTO endstate_entries VALUES('c-limit',1,'{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-limit',2,'{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO endstate_entries VALUES('c-limit',3,'{"at":1796562894.1325688,"limit":"turns","reason":"limit","type":"stopped"}');
INSERT INTO endstate_entries VALUES('c-question',0,'{"text":"task of c-question","type":"task"}');
INSERT INTO endstate_entries VALUES('c-question',1,'{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-question',2,'{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO endstate_entries VALUES('c-question',3,'{"input_tokens":160,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"need_help","note":"Which region: EU or US?"},"id":"toolu_002_0","name":"finish","type":"call"}],"response_id":"msg_002","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-question',4,'{"suspension":{"call_id":"toolu_002_0","deadline":1796649293.4489672,"question":"Which region: EU or US?","suspended_at":1796562893.4489672},"type":"suspended"}');
INSERT INTO endstate_entries VALUES('c-timeout',0,'{"text":"task of c-timeout","type":"task"}');
INSERT INTO endstate_entries VALUES('c-timeout',1,'{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"need_help","note":"Refund twice?"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO endstate_entries VALUES('c-timeout',2,'{"suspension":{"call_id":"toolu_001_0","deadline":1796562894.6922402,"question":"Refund twice?","suspended_at":1796562893.6922402},"type":"suspended"}');
DELETE FROM sqlite_sequence;
CREATE INDEX endstate_runs_status ON endstate_runs (status, deadline);
CREATE INDEX endstate_runs_started ON endstate_runs (started_at);
CREATE INDEX endstate_reviews_run ON endstate_reviews (run_id, id);
CREATE INDEX endstate_runs_ended ON endstate_runs (status, ended_at);
CREATE INDEX endstate_audits_due ON endstate_audits (outcome, due_at);
CREATE INDEX endstate_runs_waiting ON endstate_runs (status, suspended_at, run_id) WHERE status = 'waiting';
CREATE INDEX endstate_runs_waiting_by ON endstate_runs (status, agent, task_type, suspended_at, run_id) WHERE status = 'waiting';
COMMIT;
