/* The trace file's schema (version TS_SCHEMA_VERSION in PRAGMA user_version,
 * application_id 'DTRC'): tables written while tracing, views that make
 * them readable in the sqlite3 shell, and the indexes built once at the end
 * (an index maintained during inserts would cut the insert rate tenfold).
 * docs/trace-format.md documents every table and column; the tables and
 * their columns are described in common/trace_schema.h, shared with the
 * viewer. */
#include "tr_impl.h"

/* The tables come from common/trace_schema.h (ts_create_sql), which the
 * viewer checks a trace against; the event kinds are rows of one of them,
 * from common/vocab.h. */
#define KIND_ROW_(name, n, text) "INSERT INTO kinds VALUES(" #n ",'" text "');"
TR_HIDDEN const char tr_schema_kinds[] = DT_EVENT_KINDS(KIND_ROW_) "\n";

/* Views: `tensors` puts a tensor's row and its interned attributes back
 * together (one scalar subquery per attribute, not a join: a view that is a
 * join would be materialized whole on the right of a LEFT JOIN); `events`,
 * `op_args`, `op_outputs_extra` and `op_outputs` put the compact tables back
 * together (every event in one place; every argument, every output of an
 * op: an op's first two arguments and an in-place op's output are columns of
 * its row), the v_* views add names for people (v_roles a role's), as source_facts_v does
 * for the source facts (strings for the ids). */
/* SQL text, laid out as SQL reads, with the vocabulary's CASE expressions in it: */
// clang-format off
TR_HIDDEN const char tr_schema_views[] =
    "CREATE VIEW tensors AS SELECT r.id, r.seq, r.t, r.thread, r.stack, r.pystack,"
    " (SELECT dtype FROM tensor_attrs a WHERE a.id = r.attrs) AS dtype,"
    " (SELECT shape FROM tensor_attrs a WHERE a.id = r.attrs) AS shape,"
    " (SELECT strides FROM tensor_attrs a WHERE a.id = r.attrs) AS strides,"
    " (SELECT storage_offset FROM tensor_attrs a WHERE a.id = r.attrs) AS storage_offset,"
    " (SELECT device FROM tensor_attrs a WHERE a.id = r.attrs) AS device, r.storage,"
    " (SELECT nbytes FROM tensor_attrs a WHERE a.id = r.attrs) AS nbytes,"
    " (SELECT origin FROM tensor_attrs a WHERE a.id = r.attrs) AS origin,"
    " (SELECT what FROM tensor_attrs a WHERE a.id = r.attrs) AS what,"
    " (SELECT src FROM derived d WHERE d.tensor = r.id) AS src, r.op,"
    " (SELECT out_pos FROM tensor_attrs a WHERE a.id = r.attrs) AS out_pos,"
    " (SELECT detail FROM tensor_attrs a WHERE a.id = r.attrs) AS detail,"
    " (SELECT name FROM tensor_attrs a WHERE a.id = r.attrs) AS name, r.free_seq, r.free_t, r.free_thread,"
    " r.free_stack, r.free_pystack FROM tensor_rows r;\n"
    "CREATE VIEW frees AS SELECT id AS tensor, free_seq AS seq, free_t AS t, free_thread AS thread, free_stack AS"
    " stack, free_pystack AS pystack FROM tensor_rows WHERE free_seq IS NOT NULL UNION ALL SELECT tensor, seq, t,"
    " thread, stack, pystack FROM frees_late;\n"
    "CREATE VIEW events AS SELECT seq, t, thread, kind, tensor, op, stack, pystack, value FROM misc_events"
    " UNION ALL SELECT seq, t, thread, 3, id, op, stack, pystack, NULL FROM tensor_rows"
    " UNION ALL SELECT seq, t, thread, 6, tensor, NULL, stack, pystack, NULL FROM frees"
    " UNION ALL SELECT seq, t, thread, 7, NULL, op, stack, pystack, NULL FROM ops"
    " UNION ALL SELECT seq + len, t + dur, thread, 8, NULL, op, stack, pystack, status FROM ops"
    " WHERE len IS NOT NULL UNION ALL SELECT seq, t, thread, 13, NULL, NULL, stack, pystack, kind FROM cuda_calls;\n"
    "CREATE VIEW op_args AS SELECT op, 0 AS pos, arg0_name AS name, arg0_tensor AS tensor, arg0_device AS device"
    " FROM ops WHERE nargs > 0 UNION ALL SELECT op, 1, arg1_name, arg1_tensor, arg1_device FROM ops WHERE nargs > 1"
    " UNION ALL SELECT op, pos, name, tensor, device FROM op_args_more;\n"
    "CREATE VIEW op_outputs_extra AS SELECT op, 0 AS pos, out0 AS tensor FROM ops WHERE out0 IS NOT NULL"
    " UNION ALL SELECT op, pos, tensor FROM op_outputs_more;\n"
    "CREATE VIEW op_outputs AS SELECT r.op, a.out_pos AS pos, r.id AS tensor FROM tensor_rows r JOIN tensor_attrs a"
    " ON a.id = r.attrs WHERE a.out_pos IS NOT NULL"
    " UNION ALL SELECT op, pos, tensor FROM op_outputs_extra;\n"
    "CREATE VIEW device_names AS SELECT device, CASE WHEN device = 0 THEN 'cpu' WHEN device >> 16 = 1 THEN"
    " 'cuda:' || (device & 65535) WHEN device >> 16 = 2 THEN 'meta' WHEN device >> 16 = 3 THEN 'other:' ||"
    " (device & 65535) ELSE 'device' || device END AS name FROM (SELECT device FROM devices"
    " UNION SELECT device FROM tensor_attrs);\n"
    "CREATE VIEW v_events AS SELECT e.seq, e.t AS t_ns, th.tid, th.name AS thread, k.name AS kind, e.tensor,"
    " e.op, e.stack, e.pystack, e.value FROM events e LEFT JOIN kinds k ON k.kind = e.kind"
    " LEFT JOIN threads th ON th.id = e.thread;\n"
    "CREATE VIEW v_tensors AS SELECT t.id, t.seq, CASE t.dtype WHEN 0 THEN 'float32' WHEN 1 THEN 'int64'"
    " WHEN 2 THEN 'bool' WHEN 3 THEN 'float64' WHEN 4 THEN 'float16' WHEN 5 THEN 'bfloat16' WHEN 6 THEN 'int32'"
    " WHEN 7 THEN 'uint8' WHEN 8 THEN 'other' END AS dtype,"
    " sh.text AS shape, COALESCE(st.text, 'contiguous') AS strides,"
    " d.name AS device, t.storage, t.nbytes,"
    " " DT_VOCAB_SQL_CASE("t.origin", DT_ORIGINS) " AS origin, w.text AS what, t.src, t.op,"
    " (SELECT s.text FROM names n JOIN strings s ON s.id = n.name WHERE n.tensor = t.id ORDER BY n.seq DESC"
    " LIMIT 1) AS name, COALESCE(n0.text, '') AS name_at_creation, t.stack, t.pystack,"
    " COALESCE(t.free_seq, (SELECT f.seq FROM frees_late f WHERE f.tensor = t.id)) AS freed_seq"
    " FROM tensors t LEFT JOIN strings w ON w.id = t.what LEFT JOIN strings n0 ON n0.id = t.name"
    " LEFT JOIN strings sh ON sh.id = t.shape LEFT JOIN strings st ON st.id = t.strides"
    " LEFT JOIN device_names d ON d.device = t.device;\n"
    "CREATE VIEW v_transfers AS SELECT x.seq, x.src, x.dst, a.name AS src_device, b.name AS dst_device,"
    " x.bytes, " DT_VOCAB_SQL_CASE("x.kind", DT_TRANSFER_KINDS)
    " AS kind, v.text AS via, e.stack, e.pystack FROM transfers x LEFT JOIN device_names a ON"
    " a.device = x.src_device LEFT JOIN device_names b ON b.device = x.dst_device LEFT JOIN strings v ON"
    " v.id = x.via LEFT JOIN misc_events e ON e.seq = x.seq;\n"
    "CREATE VIEW v_ops AS SELECT o.op, s.text AS name, o.seq AS begin_seq, COALESCE(o.seq + o.len, (SELECT"
    " e.seq FROM misc_events e WHERE e.op = o.op AND e.kind = 8)) AS end_seq,"
    " COALESCE(o.dur, (SELECT e.t - o.t FROM misc_events e WHERE e.op = o.op AND e.kind = 8)) AS dur_ns,"
    " COALESCE(o.status, (SELECT e.value FROM misc_events e WHERE e.op = o.op AND e.kind = 8))"
    " AS status, (SELECT group_concat((SELECT text FROM strings n WHERE n.id = a.name) || '=t' || a.tensor, ', ')"
    " FROM (SELECT name, tensor FROM op_args WHERE op = o.op ORDER BY pos) a) AS args, (SELECT group_concat('t' ||"
    " u.tensor, ', ') FROM op_outputs u WHERE u.op = o.op) AS outputs, o.stack, o.pystack FROM ops o"
    " LEFT JOIN strings s ON s.id = o.name;\n"
    "CREATE VIEW v_errors AS SELECT r.seq, CASE WHEN r.signal IS NOT NULL THEN 'fatal_signal' WHEN"
    " r.first_arg IS NOT NULL OR r.device_a IS NOT NULL THEN 'device_mismatch' WHEN r.exception IS NOT NULL"
    " THEN 'exception' ELSE 'error' END AS what, r.kind, o.text AS op, r.message, r.signal, r.first_arg,"
    " r.other_arg, r.exception, r.device_a, r.device_b, r.arg, printf('0x%x', r.object) AS object, e.op AS op_seq, "
    "e.stack, e.pystack FROM errors r"
    " LEFT JOIN strings o ON o.id = r.op LEFT JOIN misc_events e ON e.seq = r.seq;\n"
    "CREATE VIEW v_cuda_calls AS SELECT c.seq, c.t AS t_ns, th.tid, a.text AS api, "
    DT_VOCAB_SQL_CASE("c.kind", DT_CUDA_CALL_KINDS) " AS kind, " DT_VOCAB_SQL_CASE("c.dir", DT_CUDA_DIRS)
    " AS dir, c.bytes, printf('0x%x', c.dst) AS dst, printf('0x%x', c.src) AS src, CASE c.host WHEN 0 THEN"
    " 'pageable' WHEN 1 THEN 'pinned' WHEN 2 THEN 'managed' END AS host,"
    " c.device, c.peer, printf('0x%x', c.stream) AS stream, printf('0x%x', c.func) AS func, c.rc, c.dur AS"
    " dur_ns, c.corr, c.stack, c.pystack FROM cuda_calls c LEFT JOIN strings a ON a.id = c.api LEFT JOIN threads th"
    " ON th.id = c.thread;\n"
    "CREATE VIEW v_cuda_activity AS SELECT x.seq, x.t AS t_ns, w.text AS what, CASE x.kind WHEN 1 THEN 'memcpy'"
    " WHEN 4 THEN 'memset' WHEN 5 THEN 'kernel' END AS kind, CASE x.dir WHEN 0 THEN 'HtoH' WHEN 1 THEN 'HtoD'"
    " WHEN 2 THEN 'DtoH' WHEN 3 THEN 'DtoD' END AS dir, x.bytes, CASE x.host WHEN 0 THEN 'pageable' WHEN 1 THEN"
    " 'pinned' WHEN 2 THEN 'managed' END AS host, x.device, x.stream, x.corr, x.start AS start_ns, x.dur AS"
    " dur_ns, n.text AS name, c.seq AS call_seq, a.text AS call_api, c.stack, c.pystack FROM cuda_activity x"
    " LEFT JOIN strings w ON w.id = x.what LEFT JOIN strings n ON n.id = x.name LEFT JOIN cuda_calls c ON"
    " c.corr = x.corr LEFT JOIN strings a ON a.id = c.api;\n"
    "CREATE VIEW v_stack_frames AS WITH RECURSIVE walk(stack, level, id, ip) AS (SELECT id, 0, id, ip FROM"
    " frames UNION ALL SELECT w.stack, w.level + 1, f.parent, p.ip FROM walk w JOIN frames f ON f.id = w.id"
    " JOIN frames p ON p.id = f.parent) SELECT w.stack, w.level, printf('0x%x', w.ip) AS ip, m.path AS"
    " module, w.ip - m.base AS offset FROM walk w LEFT JOIN modules m ON w.ip >= m.start AND w.ip < m.end;\n"
    "CREATE VIEW v_py_frames AS WITH RECURSIVE walk(stack, level, id, code, line) AS (SELECT id, 0, id,"
    " code, line FROM py_frames UNION ALL SELECT w.stack, w.level + 1, f.parent, p.code, p.line FROM walk w"
    " JOIN py_frames f ON f.id = w.id JOIN py_frames p ON p.id = f.parent) SELECT w.stack, w.level,"
    " fs.text AS file, w.line, ns.text AS function FROM walk w JOIN py_code c ON c.id = w.code LEFT JOIN"
    " strings fs ON fs.id = c.file LEFT JOIN strings ns ON ns.id = c.name;\n"
    "CREATE VIEW source_facts_v AS SELECT f.text AS file, x.line, k.text AS key, v.text AS value FROM"
    " source_facts x LEFT JOIN strings f ON f.id = x.file LEFT JOIN strings k ON k.id = x.key LEFT JOIN"
    " strings v ON v.id = x.value;\n"
    "CREATE VIEW v_roles AS SELECT x.seq, x.tensor, " DT_VOCAB_SQL_CASE("x.role", DT_TENSOR_ROLES)
    " AS role, x.of_tensor, k.text AS key FROM roles x LEFT JOIN strings k ON k.id = x.key;\n";
// clang-format on

/* misc_op_end serves the viewer's late op_end lookup (VW_OP_STATUS_SQL), whose `kind = ` is the same literal:
 * SQLite uses a partial index only for a query whose WHERE implies the index's. */
TR_HIDDEN const char tr_schema_indexes[] =
    "CREATE INDEX IF NOT EXISTS misc_op_end ON misc_events(op) WHERE kind = " DT_SQL_EV_OP_END ";\n"
    "CREATE INDEX IF NOT EXISTS derived_src ON derived(src);\n"
    "CREATE INDEX IF NOT EXISTS names_tensor ON names(tensor);\n"
    "CREATE INDEX IF NOT EXISTS transfers_src ON transfers(src);\n"
    "CREATE INDEX IF NOT EXISTS transfers_dst ON transfers(dst) WHERE dst IS NOT NULL;\n";
