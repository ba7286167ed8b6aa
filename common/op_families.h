/* Names the producers write and the viewer's diagnosis reads, in one place until the producers record them as
 * typed facts (an op's family, a tensor's role, a frame's kind): the op families the diagnosis tells apart, the
 * origin the PyTorch recorder gives a module's parameter, the name prefix runtime/optim.c and the recorder give
 * an optimizer's state, and the frames Python names specially. Each is a name as the trace holds it; the viewer
 * compares against these constants only, never against a literal of its own. The Python side is to take them
 * from the extension (issue 40, item 4). */
#ifndef DEVTRACE_OP_FAMILIES_H
#define DEVTRACE_OP_FAMILIES_H

/* ---------------------------------------------------------------- op families (ops.name, aten:: stripped) */

/* Ops that move a tensor between devices, and the copies they are made of: their input is where the data came
 * from, not where the program works. As an SQL list. */
#define DT_OPS_MOVE_SQL "'to', 'cpu', 'cuda', 'copy_', '_to_copy', 'set_data'"
/* The moves a program writes as a method that takes the device (Tensor.to, .cuda): a move that returned its own
 * input moved nothing. As an SQL list. */
#define DT_OPS_MOVE_TO_SQL "'to', 'cuda'"
/* The in-place random and fill initializers of a module's parameters (torch.nn.init and Tensor's own): they run
 * at construction, on the cpu wherever the model is meant to run. As an SQL list. */
#define DT_OPS_INIT_SQL                                                                                                \
    "'uniform_', 'normal_', 'fill_', 'zero_', 'random_', 'bernoulli_', 'exponential_', 'cauchy_', 'log_normal_', "     \
    "'geometric_', 'kaiming_uniform_', 'kaiming_normal_', 'xavier_uniform_', 'xavier_normal_', 'trunc_normal_', "      \
    "'orthogonal_', 'constant_', 'ones_', 'zeros_', 'eye_', 'dirac_'"

/* The methods a program moves an object with (x.to(device), model.cuda()), as the source facts name a call's
 * callee ("model.to"): the last name after a dot. */
#define DT_METHOD_MOVE_TO   "to"
#define DT_METHOD_MOVE_CUDA "cuda"
/* The method that copies a tensor to the cpu (x.cpu()). */
#define DT_METHOD_COPY_CPU "cpu"

/* ---------------------------------------------------------------- origins and roles */

/* tensors.what of a module's parameter, as the PyTorch recorder writes it (origin factory). */
#define DT_WHAT_PARAMETER "nn.Parameter"
/* The name prefix of an optimizer's state tensor: "optimizer.state.<parameter>.<key>" (runtime/optim.c, the
 * PyTorch recorder). */
#define DT_NAME_OPTIMIZER_STATE "optimizer.state."

/* ---------------------------------------------------------------- frames (Python) */

/* The last name of a constructor's frame ("Net.__init__"). */
#define DT_PY_CONSTRUCTOR "__init__"
/* The frame of a script's top level, and C's entry point: the program's outermost function. */
#define DT_PY_TOP_LEVEL "<module>"
#define DT_C_MAIN       "main"

#endif
