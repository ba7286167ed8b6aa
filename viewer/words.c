/* The fix's sentence, as a person reads it: written from the kind of sentence the rule chose (enum vw_say) and
 * its parameters, the case's odd operand and its intended device. The rules decide; only this file words it. */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void say(struct vw_fix *fx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct vw_fix *fx, const char *fmt, ...) {
    size_t n = strlen(fx->text);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fx->text + n, sizeof fx->text - n, fmt, ap);
    va_end(ap);
}

static const char *dev(int64_t d, char *buf) { return vw_device_name(d, buf, 32); }

static const char *site(const struct vw_step *s, char *buf, size_t size) {
    return s->has_site ? vw_site_str(&s->site, buf, size) : "?";
}

/* The copy a copied-off-device fix cites (w->at), when the fix is not at it: its site into buf, 1; else "" and 0. */
static int copied_at(const struct vw_fix *fx, char *buf, size_t size) {
    buf[0] = '\0';
    if (!fx->words.at.has_site || !fx->has_site || vw_same_site(&fx->words.at, &fx->site)) return 0;
    site(&fx->words.at, buf, size);
    return 1;
}

void vw_fix_words(const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_fix_words *w = &fx->words;
    const struct vw_operand *o = k->odd;
    char on[300], want[32], d2[32], d3[32], buf[1024], buf2[1024];
    if (w->say == VW_SAY_RULE || !o) return;
    fx->text[0] = '\0';
    vw_operand_called(o, on, sizeof on);
    dev(k->want, want);
    switch (w->say) {
    case VW_SAY_RULE: break;
    case VW_SAY_CHECKPOINT_LOAD:
        say(fx, "load the checkpoint with map_location=%s (or move %s to %s after loading)", w->expr, on, want);
        break;
    /* "here" only where the fix is at the copy (w->at); a fix elsewhere (a move back before the failing
     * statement) names the copy's site */
    case VW_SAY_COPIED_OFF_DEVICE:
        say(fx, "keep %s on %s: it was copied off the device %s%s; use the device tensor, or move the copy back to %s",
            on, want, copied_at(fx, buf, sizeof buf) ? "at " : "here", buf, want);
        break;
    case VW_SAY_COPIED_ELSEWHERE:
        say(fx, "%s was copied to %s %s%s, but the op runs on %s: copy it to %s", on, dev(o->dev, d2),
            copied_at(fx, buf, sizeof buf) ? "at " : "here", buf, want, want);
        break;
    case VW_SAY_SOURCE_MOVED_FIRST:
        say(fx,
            "%s was made from \"%.120s\" while that was on %s (%.300s); the move at %.300s took \"%.120s\" to %s "
            "and left %s behind: make that move before the statement that made it (or move it to %s too)",
            on, w->name, dev(o->dev, d2), site(&w->at, buf, sizeof buf), site(&w->at2, buf2, sizeof buf2), w->name,
            want, on, want);
        break;
    case VW_SAY_SOURCE_MOVED_AFTER:
        say(fx,
            "%s was made from \"%.120s\" while that was on %s (%.300s); this move took \"%.120s\" to %s and left %s "
            "behind: make it after this move (or move it to %s too)",
            on, w->name, dev(o->dev, d2), site(&w->at, buf, sizeof buf), w->name, want, on, want);
        break;
    case VW_SAY_STATE_MOVE_MODEL:
        say(fx,
            "the optimizer state %s was made on %s next to its parameter \"%s\", which was then moved to %s here and "
            "left the state behind: move the model to %s before the optimizer's state is created or loaded (or move "
            "the state too)",
            on, dev(o->dev, d2), w->name, dev(w->dev, d3), want);
        break;
    case VW_SAY_STATE_RELOAD:
        say(fx,
            "the optimizer state %s was made on %s by a step the program ran before moving its parameter \"%s\" "
            "to %s here, which left the state behind: after this move, load the optimizer's own state dict back "
            "into it, which puts each state where its parameter now is",
            on, dev(o->dev, d2), w->name, dev(w->dev, d3));
        break;
    case VW_SAY_PASS_DEVICE:
        say(fx,
            "pass the device to %s at %s:%d: %s was moved with .to(%s) in %s (line %d), but %s is a parameter that "
            "defaults to %s and the call gave none, so it stayed on %s",
            w->func, w->frame.file, w->frame.line, on, w->expr, w->frame2.function, w->frame2.line, w->expr, w->text,
            dev(o->dev, d2));
        break;
    case VW_SAY_PEER_MOVED:
        say(fx, "move %s to %s where its peer \"%s\" is moved", on, want, w->name);
        break;
    case VW_SAY_ROOT_PEER_MOVED:
        say(fx, "move \"%s\" to %s where %s%s made with it is moved: %s is computed from it (made at %s)", w->name,
            want, w->name2, w->name2[0] == '"' ? ", the tensor" : "", on, site(&w->at, buf, sizeof buf));
        break;
    case VW_SAY_SIBLING_MOVED:
        say(fx, "move %s to %s where %s, made with it at %s, is moved", on, want, w->name2[0] ? w->name2 : "the tensor",
            site(&w->at, buf, sizeof buf));
        break;
    case VW_SAY_TEMPORARY_DEVICE:
        say(fx, "make %s on %s where it is made, inside the expression at %s:%d: %s(..., %s)", on, want,
            w->at.site.file, w->at.site.line, w->func, w->text);
        if (w->count)
            say(fx, " (and the %d other %s call%s of that statement)", w->count, w->func, w->count == 1 ? "" : "s");
        break;
    case VW_SAY_TEMPORARY_MOVE:
        say(fx, "move %s to %s where it is made, inside the expression at %s:%d: %s(...)%s (%s takes no device)", on,
            want, w->at.site.file, w->at.site.line, w->func, w->text, w->func);
        break;
    case VW_SAY_MOVE_AT_CALL:
        say(fx,
            "move %s to %s where %s:%d calls %s: %s made it at line %d with no tensor or device of its own to follow, "
            "the caller has %s: %s(...).to(%s)",
            on, want, w->frame.file, w->frame.line, w->func, w->at.site.function, w->at.site.line, w->expr, w->func,
            w->expr);
        if (w->count)
            say(fx, " (and the %d other call%s of %s in that statement)", w->count, w->count == 1 ? "" : "s", w->func);
        break;
    case VW_SAY_DEVICE_FOLLOWED_COPY:
        say(fx,
            "%s is on %s because it was made (at %s) with device=%s, which follows \"%s\": keep \"%s\" on %s, which "
            "was copied off the device at %s",
            on, dev(o->dev, d2), site(&w->at2, buf2, sizeof buf2), w->expr, w->name, w->name, want,
            site(&w->at, buf, sizeof buf));
        break;
    case VW_SAY_INPUT_NOT_MOVED:
        if (w->count)
            say(fx,
                "move %s to %s where %s holds it as \"%s\": the program moved tensors made with it to %s at %s, on "
                "another way to this op than the one that failed",
                on, want, w->frame.function, w->name, want, site(&w->at, buf, sizeof buf));
        else
            say(fx, "move %s to %s where %s holds it as \"%s\": it moves the other tensors it uses to %s (line %d), "
                "not this one",
                on, want, w->frame.function, w->name, want, w->at.site.line);
        break;
    case VW_SAY_THROUGH_ARGUMENT:
        say(fx,
            "move \"%s\" to %s where the program binds it: %s reaches the failing op through the failing call's "
            "argument \"%s\"",
            w->name, want, on, w->name);
        break;
    }
}
