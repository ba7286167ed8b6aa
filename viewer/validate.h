/* The shapes a source fact may have (docs/source-facts.md, "Accepted shapes"), checked where a fact is read,
 * and the shapes of the code a fix writes, checked before a patch is made of it. A trace is untrusted input:
 * a fact of any other shape is refused, never used, and the trace is then inconsistent. Only checks text;
 * what a fact means is the model's. */
#ifndef DEVTRACE_VALIDATE_H
#define DEVTRACE_VALIDATE_H

#include <stddef.h>

/* An identifier as Python and C write one: ASCII letters, digits and _, not starting with a digit, or
 * well-formed UTF-8 letters past U+00A0 (Python's identifiers), never a format or bidi control. */
int vw_shape_ident(const char *s);
/* Identifiers joined by `.` (Python's self.x, args.device) or, with arrows, also `->` (C's self->scale). */
int vw_shape_member(const char *s, int arrows);
/* A callee as a fix shows it: identifiers joined by `.`, `->` or `::` (torch.zeros, model->to, torch::randn). */
int vw_shape_callee(const char *s);
/* Leading whitespace: spaces, tabs and form feeds only, at most 255 bytes. */
int vw_shape_indent(const char *s);
/* A device named by a string literal, quotes included: "cpu", "cuda", "cuda:1", "meta"... */
int vw_shape_device_literal(const char *s);
/* What a fix may write as a device expression: a member whose names may be indexed by a number or a name
 * (device, args.device, x.device, gpus[0]), a device literal, or a device index (0). */
int vw_shape_device_code(const char *s);
/* A condition a fix may copy from the program to run its move under (the program's own `if args.cuda:`):
 * members (use_cuda, args.cuda, self.gpu), `torch.cuda.is_available()` and `torch.cuda.device_count()` (no
 * other call), numbers and string literals of a few plain characters, joined by not, and, or, is, None, True,
 * False, comparisons and parentheses; at most 200 bytes. 0 otherwise. */
int vw_shape_guard(const char *s);
/* A value of source fact `key` as a producer writes it; 0, with what is wrong in why (never the value
 * itself: it may be anything), when it is not. A key the viewer does not read passes. */
int vw_fact_shape(const char *key, const char *value, const char **why);
/* The code of a fix as a rule makes it: each line of an added statement code-shaped (below); for edits inside
 * a statement (replace), each edit's text code-shaped and at most 6 characters removed, and the shown form
 * a callee followed by code. 0, with what is wrong in why, otherwise. */
int vw_fix_code_shape(const char *code, int replace, int python, const char *const *edit_texts,
                      const int *edit_dels, int nedits, const char **why);
/* One line of code as a rule generates it: identifiers, numbers, string literals of a few plain characters
 * ("cuda:0", "bias"), and . -> :: = ( ) [ ] , ; * and spaces, parentheses balanced, never two names in a row
 * but after `del` or `return`; with dots, also `...` (the shown form of an edited call); a statement after
 * `if GUARD: ` (vw_shape_guard). 0 otherwise.
 * (Python code: no `;` at all, in vw_fix_code_shape.) */
int vw_code_line_shape(const char *s, int dots);

#endif
