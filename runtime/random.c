/* The runtime's random number generator: one global xoshiro256** stream,
 * seeded by dt_manual_seed(), drawn on the host for every device so that a
 * program gives the same numbers on cpu, simulated and real cuda. */
#include "dt_impl.h"

#include <math.h>
#include <pthread.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_s[4] = {0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull,
                          0x2545f4914f6cdd1dull}; /* state; guarded by g_lock */

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_locked(void) {
    uint64_t r = rotl(g_s[1] * 5, 7) * 9, t = g_s[1] << 17;
    g_s[2] ^= g_s[0];
    g_s[3] ^= g_s[1];
    g_s[1] ^= g_s[2];
    g_s[0] ^= g_s[3];
    g_s[2] ^= t;
    g_s[3] = rotl(g_s[3], 45);
    return r;
}

void dt_manual_seed(uint64_t seed) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < 4; i++) { /* splitmix64 expands the seed */
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        g_s[i] = z ^ (z >> 31);
    }
    pthread_mutex_unlock(&g_lock);
}

static double unit_locked(void) { return (double)(next_locked() >> 11) * 0x1.0p-53; }

void dt__rand_uniform(float *out, int64_t n) {
    pthread_mutex_lock(&g_lock);
    for (int64_t i = 0; i < n; i++) {
        float v = (float)unit_locked();
        out[i] = v < 1.0f ? v : 0x1.fffffep-1f; /* rounding must not reach 1 */
    }
    pthread_mutex_unlock(&g_lock);
}

void dt__rand_normal(float *out, int64_t n) {
    pthread_mutex_lock(&g_lock);
    for (int64_t i = 0; i < n; i += 2) { /* Box-Muller, two values per draw */
        double u1 = unit_locked(), u2 = unit_locked();
        double r = sqrt(-2.0 * log(1.0 - u1)), th = 2.0 * M_PI * u2;
        out[i] = (float)(r * cos(th));
        if (i + 1 < n) out[i + 1] = (float)(r * sin(th));
    }
    pthread_mutex_unlock(&g_lock);
}

void dt__rand_int(int64_t *out, int64_t n, int64_t low, int64_t high) {
    uint64_t span = (uint64_t)high - (uint64_t)low;
    uint64_t limit = UINT64_MAX - UINT64_MAX % span; /* reject to avoid modulo bias */
    pthread_mutex_lock(&g_lock);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r;
        do r = next_locked();
        while (r >= limit);
        out[i] = (int64_t)((uint64_t)low + r % span);
    }
    pthread_mutex_unlock(&g_lock);
}
