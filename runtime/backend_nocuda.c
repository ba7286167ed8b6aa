/* Built instead of cuda/backend_cuda.cu when the CUDA toolkit was not found:
 * there is no real CUDA backend, so cuda:N exists only when simulated. */
#include "dt_impl.h"

const struct dt_backend *const dt__backend_cuda_ptr = NULL;
