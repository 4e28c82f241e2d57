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

INSERT INTO public.endstate_entries VALUES ('c-question', 0, '{"text":"task of c-question","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-question', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-question', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-question', 3, '{"input_tokens":160,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"need_help","note":"Which region: EU or US?"},"id":"toolu_002_0","name":"finish","type":"call"}],"response_id":"msg_002","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-question', 4, '{"suspension":{"call_id":"toolu_002_0","deadline":1796647382.0709372,"question":"Which region: EU or US?","suspended_at":1796560982.0709372},"type":"suspended"}');
INSERT INTO public.endstate_entries VALUES ('c-approval', 0, '{"text":"task of c-approval","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-approval', 1, '{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"amount":120.0,"customer":"ACME"},"id":"toolu_001_1","name":"send_invoice","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-approval', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-approval', 3, '{"suspension":{"call_id":"toolu_001_1","deadline":1796647382.1125772,"pending":{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"},"question":"Approve the call send_invoice({\"amount\": 120.0, \"customer\": \"ACME\"})?","suspended_at":1796560982.1125772},"type":"suspended"}');
INSERT INTO public.endstate_entries VALUES ('c-deny', 0, '{"text":"task of c-deny","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-deny', 1, '{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"amount":120.0,"customer":"ACME"},"id":"toolu_001_1","name":"send_invoice","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-deny', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-deny', 3, '{"suspension":{"call_id":"toolu_001_1","deadline":1796647382.14872,"pending":{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"},"question":"Approve the call send_invoice({\"amount\": 120.0, \"customer\": \"ACME\"})?","suspended_at":1796560982.14872},"type":"suspended"}');
INSERT INTO public.endstate_entries VALUES ('c-expired', 0, '{"text":"task of c-expired","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-expired', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"need_help","note":"Ship today?"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-expired', 2, '{"suspension":{"call_id":"toolu_001_0","deadline":1796560983.1732635,"question":"Ship today?","suspended_at":1796560982.1732635},"type":"suspended"}');
INSERT INTO public.endstate_entries VALUES ('c-timeout', 0, '{"text":"task of c-timeout","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-timeout', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"need_help","note":"Refund twice?"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-timeout', 2, '{"suspension":{"call_id":"toolu_001_0","deadline":1796560983.2151277,"question":"Refund twice?","suspended_at":1796560982.2151277},"type":"suspended"}');
INSERT INTO public.endstate_entries VALUES ('c-answered', 0, '{"text":"task of c-answered","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-answered', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"need_help","note":"Which customer?"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-answered', 2, '{"suspension":{"call_id":"toolu_001_0","deadline":1796647382.2477033,"question":"Which customer?","suspended_at":1796560982.2477033},"type":"suspended"}');
INSERT INTO public.endstate_entries VALUES ('c-cancelled', 0, '{"text":"task of c-cancelled","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-cancelled', 1, '{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"customer":"BETA"},"id":"toolu_001_1","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-cancelled', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-cancelled', 3, '{"call_id":"toolu_001_1","ran":"lookup","seen":"cd78250ad4e913d7","text":"BETA: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-cancelled', 4, '{"at":1796560982.2871034,"note":"The caller cancelled the run.","reason":"cancelled","type":"stopped"}');
INSERT INTO public.endstate_entries VALUES ('c-cut', 0, '{"text":"task of c-cut","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-cut', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"customer":"SLOW"},"id":"toolu_001_0","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-cut', 2, '{"call_id":"toolu_001_0","is_error":true,"ran":"lookup","text":"Outcome unknown: the run was stopped while this call ran, so it may or may not have taken effect. Check before you call it again.","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-cut', 3, '{"at":1796560982.3095908,"note":"The run was cancelled.","reason":"cancelled","type":"stopped"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 0, '{"text":"task of c-done","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 1, '{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"customer":"BETA"},"id":"toolu_001_1","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 3, '{"call_id":"toolu_001_1","ran":"lookup","seen":"cd78250ad4e913d7","text":"BETA: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 4, '{"input_tokens":160,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"customer":"GAMMA"},"id":"toolu_002_0","name":"lookup","type":"call"}],"response_id":"msg_002","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 5, '{"call_id":"toolu_002_0","ran":"lookup","seen":"6c7d3ae026a6a7ec","text":"GAMMA: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 6, '{"input_tokens":200,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"done","note":"three customers looked up"},"id":"toolu_003_0","name":"finish","type":"call"}],"response_id":"msg_003","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-done', 7, '{"at":1796560982.352153,"reason":"success","type":"stopped"}');
INSERT INTO public.endstate_entries VALUES ('c-limit', 0, '{"text":"task of c-limit","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-limit', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-limit', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-limit', 3, '{"at":1796560982.3711717,"limit":"turns","reason":"limit","type":"stopped"}');
INSERT INTO public.endstate_entries VALUES ('c-gave-up', 0, '{"text":"task of c-gave-up","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-gave-up', 1, '{"input_tokens":120,"model":"scripted","output_tokens":40,"parts":[{"arguments":{"kind":"give_up","note":"no such customer"},"id":"toolu_001_0","name":"finish","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-gave-up', 2, '{"at":1796560982.3878462,"note":"no such customer","reason":"gave_up","type":"stopped"}');
INSERT INTO public.endstate_entries VALUES ('c-crashed', 0, '{"text":"task of c-crashed","type":"task"}');
INSERT INTO public.endstate_entries VALUES ('c-crashed', 1, '{"input_tokens":120,"model":"scripted","output_tokens":50,"parts":[{"arguments":{"customer":"ACME"},"id":"toolu_001_0","name":"lookup","type":"call"},{"arguments":{"customer":"BETA"},"id":"toolu_001_1","name":"lookup","type":"call"}],"response_id":"msg_001","stop_reason":"tool_use","type":"reply"}');
INSERT INTO public.endstate_entries VALUES ('c-crashed', 2, '{"call_id":"toolu_001_0","ran":"lookup","seen":"287229972613c8ed","text":"ACME: net 30","type":"result"}');
INSERT INTO public.endstate_entries VALUES ('c-answered', 3, '{"at":1796560983.8825786,"by":"person","reply":{"text":"DELTA","type":"answer"},"type":"answered"}');
INSERT INTO public.endstate_entries VALUES ('c-answered', 4, '{"call_id":"toolu_001_0","text":"Answer from a person: DELTA","type":"result"}');

INSERT INTO public.endstate_runs VALUES ('c-gave-up', 'c-gave-up', 'task of c-gave-up', 'default', 'finished', '{}', 1796560982.3865535, 1796560982.3894274, 1796560982.3894274, 'gave_up', NULL, 1, 120, 40, 0.00096, 0.000236, 0, NULL, 'no such customer', 'Stopped: gave_up after 1 turn, 160 tokens, $0.0010. No tool was called.', '', 0, NULL, 1, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL, '{"agent":"c-gave-up","kind":"finished","run_id":"c-gave-up","segment":1,"task_type":"default","usage":{"active_seconds":0.00020244000006641727,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 3);
INSERT INTO public.endstate_runs VALUES ('c-question', 'c-question', 'task of c-question', 'default', 'waiting', '{}', 1796560982.050968, 1796560982.0785055, NULL, 'need_help', NULL, 2, 280, 80, 0.00204, 0.020002, 0, NULL, 'Which region: EU or US?', 'Stopped: need_help after 2 turns, 360 tokens, $0.0020. Tool calls: lookup x1. Last result (lookup): ACME: net 30', '', 0, NULL, 1, 1, 'Which region: EU or US?', NULL, 1796647382.0709372, 1796560982.0709372, 0, NULL, NULL, '{"agent":"c-question","kind":"suspended","run_id":"c-question","segment":1,"task_type":"default","usage":{"active_seconds":0.019944887000747258,"cost_usd":0.00204,"input_tokens":280,"output_tokens":80,"turns":2},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 5);
INSERT INTO public.endstate_runs VALUES ('c-limit', 'c-limit', 'task of c-limit', 'default', 'finished', '{}', 1796560982.365494, 1796560982.3715036, 1796560982.3715036, 'limit', 'turns', 1, 120, 40, 0.00096, 0.004734, 0, NULL, '', 'Stopped: limit (turns budget used up) after 1 turn, 160 tokens, $0.0010. Tool calls: lookup x1. Last result (lookup): ACME: net 30', '', 0, NULL, 1, 1, NULL, NULL, NULL, NULL, 0, NULL, NULL, '{"agent":"c-limit","kind":"limited","run_id":"c-limit","segment":1,"task_type":"default","usage":{"active_seconds":0.004680394000388333,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 4);
INSERT INTO public.endstate_runs VALUES ('c-approval', 'c-approval', 'task of c-approval', 'default', 'waiting', '{}', 1796560982.1021366, 1796560982.114487, NULL, 'need_help', NULL, 1, 120, 50, 0.00111, 0.009373, 0, NULL, 'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?', 'Stopped: need_help after 1 turn, 170 tokens, $0.0011. Tool calls: lookup x1. Last result (lookup): ACME: net 30', '', 0, NULL, 1, 1, 'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?', '{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"}', 1796647382.1125772, 1796560982.1125772, 0, NULL, NULL, '{"agent":"c-approval","kind":"suspended","run_id":"c-approval","segment":1,"task_type":"default","usage":{"active_seconds":0.009332089999588788,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 4);
INSERT INTO public.endstate_runs VALUES ('c-cancelled', 'c-ledger', 'task of c-cancelled', 'default', 'cancelled', '{}', 1796560982.2744632, 1796560982.2904828, NULL, 'cancelled', NULL, 1, 120, 50, 0.00111, 0.011102, 0, NULL, 'The caller cancelled the run.', 'Stopped: cancelled after 1 turn, 170 tokens, $0.0011. Tool calls: lookup x2. Last result (lookup): BETA: net 30', '', 0, NULL, 1, 2, NULL, NULL, NULL, NULL, 1, NULL, NULL, '{"agent":"c-ledger","kind":"cancelled","run_id":"c-cancelled","segment":1,"task_type":"default","usage":{"active_seconds":0.011096075000750716,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 5);
INSERT INTO public.endstate_runs VALUES ('c-deny', 'c-approval', 'task of c-deny', 'default', 'waiting', '{}', 1796560982.1344662, 1796560982.153307, NULL, 'need_help', NULL, 1, 120, 50, 0.00111, 0.011439, 0, NULL, 'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?', 'Stopped: need_help after 1 turn, 170 tokens, $0.0011. Tool calls: lookup x1. Last result (lookup): ACME: net 30', '', 0, NULL, 1, 1, 'Approve the call send_invoice({"amount": 120.0, "customer": "ACME"})?', '{"arguments":{"amount":120.0,"customer":"ACME"},"name":"send_invoice","tool_use_id":"toolu_001_1"}', 1796647382.14872, 1796560982.14872, 0, NULL, NULL, '{"agent":"c-approval","kind":"suspended","run_id":"c-deny","segment":1,"task_type":"default","usage":{"active_seconds":0.011401207000744762,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 4);
INSERT INTO public.endstate_runs VALUES ('c-expired', 'c-expired', 'task of c-expired', 'default', 'waiting', '{}', 1796560982.1719818, 1796560982.178596, NULL, 'need_help', NULL, 1, 120, 40, 0.00096, 0.000283, 0, NULL, 'Ship today?', 'Stopped: need_help after 1 turn, 160 tokens, $0.0010. No tool was called.', '', 0, NULL, 1, 0, 'Ship today?', NULL, 1796560983.1732635, 1796560982.1732635, 0, NULL, NULL, '{"agent":"c-expired","kind":"suspended","run_id":"c-expired","segment":1,"task_type":"default","usage":{"active_seconds":0.00025702999846544117,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 3);
INSERT INTO public.endstate_runs VALUES ('c-timeout', 'c-timeout', 'task of c-timeout', 'default', 'waiting', '{}', 1796560982.213494, 1796560982.2184632, NULL, 'need_help', NULL, 1, 120, 40, 0.00096, 0.000349, 0, NULL, 'Refund twice?', 'Stopped: need_help after 1 turn, 160 tokens, $0.0010. No tool was called.', '', 0, NULL, 1, 0, 'Refund twice?', NULL, 1796560983.2151277, 1796560982.2151277, 0, NULL, NULL, '{"agent":"c-timeout","kind":"suspended","run_id":"c-timeout","segment":1,"task_type":"default","usage":{"active_seconds":0.0003196849993400974,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 3);
INSERT INTO public.endstate_runs VALUES ('c-cut', 'c-slow', 'task of c-cut', 'default', 'cancelled', '{}', 1796560982.3080442, 1796560982.3098502, NULL, 'cancelled', NULL, 1, 120, 40, 0.00096, 0.000478, 0, NULL, 'The run was cancelled.', 'Stopped: cancelled after 1 turn, 160 tokens, $0.0010. No tool was called.', '', 0, NULL, 1, 0, NULL, NULL, NULL, NULL, 1, NULL, NULL, '{"agent":"c-slow","kind":"cancelled","run_id":"c-cut","segment":1,"task_type":"default","usage":{"active_seconds":0.0004713319995062193,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 4);
INSERT INTO public.endstate_runs VALUES ('c-done', 'c-ledger', 'task of c-done', 'default', 'finished', '{}', 1796560982.3360143, 1796560982.3545315, 1796560982.3545315, 'success', NULL, 3, 480, 130, 0.00339, 0.015182, 0, NULL, '', 'Stopped: success after 3 turns, 610 tokens, $0.0034. Tool calls: lookup x3. Last result (lookup): GAMMA: net 30', 'three customers looked up', 0, NULL, 1, 3, NULL, NULL, NULL, NULL, 0, NULL, NULL, '{"agent":"c-ledger","kind":"finished","run_id":"c-done","segment":1,"task_type":"default","usage":{"active_seconds":0.015117973000087659,"cost_usd":0.00339,"input_tokens":480,"output_tokens":130,"turns":3},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 8);
INSERT INTO public.endstate_runs VALUES ('c-crashed', 'c-ledger', 'task of c-crashed', 'default', 'running', '{}', 1796560983.0432608, 1796560983.0484452, NULL, NULL, NULL, 1, 120, 50, 0.00111, 0.0008086470006674062, 0, NULL, '', '', '', 0, NULL, 1, 1, NULL, NULL, NULL, NULL, 0, 'vm/4026531836/c77404778d95:5413:0c2cbf04', 1796561013.056134, '{"agent":"c-ledger","kind":"checkpoint","run_id":"c-crashed","segment":1,"task_type":"default","usage":{"active_seconds":0.0008086470006674062,"cost_usd":0.00111,"input_tokens":120,"output_tokens":50,"turns":1},"version":2}', NULL, NULL, NULL, 1, 0, 0, NULL, 2, 30, NULL, NULL, NULL, NULL, 3);
INSERT INTO public.endstate_runs VALUES ('c-answered', 'c-followup', 'task of c-answered', 'default', 'running', '{}', 1796560982.246272, 1796560983.8847318, NULL, 'need_help', NULL, 1, 120, 40, 0.00096, 0.00033891800012497697, 1.6348752975463867, NULL, 'Which customer?', 'Stopped: need_help after 1 turn, 160 tokens, $0.0010. No tool was called.', '', 0, NULL, 2, 1, 'Which customer?', NULL, 1796647382.2477033, 1796560982.2477033, 0, 'vm/4026531836/c77404778d95:5425:ac61ffe2', 1796561013.894219, '{"agent":"c-followup","kind":"checkpoint","run_id":"c-answered","segment":2,"task_type":"default","usage":{"active_seconds":0.00033891800012497697,"cost_usd":0.00096,"input_tokens":120,"output_tokens":40,"turns":1,"waiting_seconds":1.6348752975463867},"version":2}', 'DELTA', NULL, 1796560983.8825786, 1, 0, 0, NULL, 2, 30, NULL, 1796560983.8825786, 'answer', 'DELTA', 5);

INSERT INTO public.endstate_schema VALUES (1, 1796560982.0155618);
INSERT INTO public.endstate_schema VALUES (2, 1796560982.0163243);
INSERT INTO public.endstate_schema VALUES (3, 1796560982.0165343);
INSERT INTO public.endstate_schema VALUES (4, 1796560982.0180511);
INSERT INTO public.endstate_schema VALUES (5, 1796560982.0235248);
INSERT INTO public.endstate_schema VALUES (6, 1796560982.0248892);
INSERT INTO public.endstate_schema VALUES (7, 1796560982.0308356);
INSERT INTO public.endstate_schema VALUES (8, 1796560982.0313559);
INSERT INTO public.endstate_schema VALUES (9, 1796560982.0314648);
INSERT INTO public.endstate_schema VALUES (10, 1796560982.0324671);
INSERT INTO public.endstate_schema VALUES (11, 1796560982.0327644);
INSERT INTO public.endstate_schema VALUES (12, 1796560982.0329769);
INSERT INTO public.endstate_schema VALUES (13, 1796560982.0332453);
INSERT INTO public.endstate_schema VALUES (14, 1796560982.0337565);
INSERT INTO public.endstate_schema VALUES (15, 1796560982.0339441);

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
