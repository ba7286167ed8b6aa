/* device-parameter-ignored: never moved, made in a function its caller handed the device to use, without it; the
 * fix goes in that function, with its parameter (never-moved family; the analysis is unmoved.c's). */
#include "rule.h"

#include <stdio.h>

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) {
    return rl_unmoved_match(cx, RL_UNMOVED_DEVICE_PARAM, fx);
}

const struct vw_rule vw_rule_device_parameter_ignored = {
    .id = "device-parameter-ignored",
    .summary = "(never-moved) made in a function given the device as a parameter, without it: fixed there, with it",
    .doc = "Library and model code takes the device from its caller (def mel_filters(device, n_mels), "
           "make_mask(n, device=x.device)) and must make its tensors there; a factory or a numpy conversion that "
           "leaves the parameter out makes it on the CPU for every caller. Moving the result in one caller fixes "
           "that caller only. The rule matches a never-moved tensor made in a function whose caller's statement "
           "hands it a device (a device value, or a name the program binds to a device or moves with) as a "
           "parameter, by position or keyword (the device_arg source fact). Example: filters = "
           "mel_filters(audio.device, 80), where mel_filters returns torch.from_numpy(bank). Fix: in the "
           "function, with its parameter: device=PARAM on a factory that takes one, else .to(PARAM) on the call "
           "that made it (return torch.from_numpy(bank).to(device)); never a literal device.",
    .example = "`return torch.from_numpy(bank)` in a helper given `device` (`tests/rules/device-parameter-ignored.py`)",
    .fixes = 1u << VW_FIX_DEVICE_ARG | 1u << VW_FIX_MOVE_CALL,
    .langs = VW_LANGS_PY,
    .match = match,
};
