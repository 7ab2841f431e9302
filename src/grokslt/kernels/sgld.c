/* CPU kernels of the native SGLD sampler for the gather-form quadratic network.
 *
 * Built on first use by grokslt.cpu_kernels (see there for the flags). tests/test_cpu_kernels.py checks
 * them against independent computations: the gather and scatter equal their torch forms bit for bit,
 * the loss and gradient match the reference to float precision, and the noise matches published
 * outputs of its generators and Box-Muller in float64. Built with -ffp-contract=off and without
 * -ffast-math, so every float operation is the IEEE operation written here, whatever the vector
 * width the compiler picks: results are the same on every machine.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

/* Whether this thread's floating-point unit flushes subnormal results to zero and treats subnormal
 * inputs as zero (x86 MXCSR FTZ and DAZ, AArch64 FPCR FZ): 1 or 0, -1 where unknown. The mode is the
 * calling thread's, set by grokslt.runtime through torch; a shared library cannot set it by its flags. */
int subnormals_flushed(void) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned int csr = _mm_getcsr();
    return ((csr >> 15) & 1u) && ((csr >> 6) & 1u);
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    return (int)((fpcr >> 24) & 1u);
#else
    return -1;
#endif
}

/* ---- first layer: a gather of two rows of W per sample, and its gradient ---- */

static int rows_in_range(const int64_t *rows, int64_t count, int64_t table_rows) {
    for (int64_t r = 0; r < count; r++)
        if (rows[r] < 0 || rows[r] >= table_rows) return 0;
    return 1;
}

/* The rows of the stacked table [chains * 2p, K] that sample idx[c][s] of chain c reads:
 * first = c 2p + a[idx], second = c 2p + p + b[idx]. Returns -1 if a sample index is out of range. */
int pair_rows(const int64_t *idx, int64_t chains, int64_t batch, const int64_t *a, const int64_t *b, int64_t samples,
              int64_t p, int64_t *first, int64_t *second) {
    if (!rows_in_range(idx, chains * batch, samples)) return -1;
    for (int64_t c = 0; c < chains; c++)
        for (int64_t s = 0; s < batch; s++) {
            int64_t i = c * batch + s;
            first[i] = c * 2 * p + a[idx[i]];
            second[i] = c * 2 * p + p + b[idx[i]];
        }
    return 0;
}

/* z[r] = (table[first[r]] + table[second[r]])^2 for each of `count` samples.
 * Returns -1 (writing nothing) if an index is outside the table. */
int gather_square(const float *table, int64_t table_rows, int64_t width, const int64_t *first,
                  const int64_t *second, int64_t count, float *z) {
    if (!rows_in_range(first, count, table_rows) || !rows_in_range(second, count, table_rows)) return -1;
    for (int64_t r = 0; r < count; r++) {
        const float *a = table + first[r] * width, *b = table + second[r] * width;
        float *zr = z + r * width;
        for (int64_t k = 0; k < width; k++) {
            float h = a[k] + b[k];
            zr[k] = h * h;
        }
    }
    return 0;
}

/* out (+)= scale * (g * (a + b)) over a row: `fresh` rows are written, not added to, which saves
 * clearing the table first (and gives the same value: 0 + x = x). */
static inline void add_row(float *out, const float *a, const float *b, const float *g, float scale, int64_t width,
                           int fresh) {
    if (fresh)
        for (int64_t k = 0; k < width; k++) out[k] = scale * (g[k] * (a[k] + b[k]));
    else
        for (int64_t k = 0; k < width; k++) out[k] += scale * (g[k] * (a[k] + b[k]));
}

enum { FIRST = 1, SECOND = 2, WRITTEN = 4 };

/* grad = 0, then grad[first[r]] += scale * (g[r] * h[r]) for every sample in order, then the same
 * onto the rows `second`, with h[r] = table[first[r]] + table[second[r]] recomputed from the table
 * (which stays in cache) rather than stored. When no row is both a `first` and a `second` row (so
 * for every network input, a < p <= p + b), one pass over the samples adds to both rows and gives
 * each row the same sums in the same order. Returns -1 (writing nothing) if an index is outside
 * the table, -2 if out of memory. */
int scatter_product(const float *g, const float *table, const int64_t *first, const int64_t *second, int64_t count,
                    int64_t width, float scale, int64_t table_rows, float *grad) {
    if (!rows_in_range(first, count, table_rows) || !rows_in_range(second, count, table_rows)) return -1;
    unsigned char *role = calloc((size_t)table_rows, 1);
    if (role == NULL) return -2;
    for (int64_t r = 0; r < count; r++) role[first[r]] |= FIRST;
    for (int64_t r = 0; r < count; r++) role[second[r]] |= SECOND;
    int disjoint = 1;
    for (int64_t row = 0; row < table_rows; row++) disjoint &= role[row] != (FIRST | SECOND);
    const int64_t *targets[2] = {first, second};
    for (int pass = 0; pass < (disjoint ? 1 : 2); pass++) {
        for (int64_t r = 0; r < count; r++) {
            const float *a = table + first[r] * width, *b = table + second[r] * width, *gr = g + r * width;
            for (int target = pass; target < (disjoint ? 2 : pass + 1); target++) {
                int64_t row = targets[target][r];
                add_row(grad + row * width, a, b, gr, scale, width, !(role[row] & WRITTEN));
                role[row] |= WRITTEN;
            }
        }
    }
    for (int64_t row = 0; row < table_rows; row++)
        if (!(role[row] & WRITTEN)) memset(grad + row * width, 0, (size_t)width * sizeof(float));
    free(role);
    return 0;
}

/* ---- the centred loss of a minibatch ---- */

/* Per chain c, with E = onehot(labels[idx]) - pred over its `batch` samples and p outputs: R = E minus
 * its mean over the samples, out = scale R and loss[c] = ||R||^2 / (2 batch). Sums in double. Returns
 * -1 if a sample index is outside [0, samples) or a label outside [0, p). */
int centred_residual(const float *pred, const int64_t *idx, const int64_t *labels, int64_t samples, int64_t chains,
                     int64_t batch, int64_t p, float scale, float *out, float *loss) {
    if (!rows_in_range(idx, chains * batch, samples)) return -1;
    for (int64_t i = 0; i < chains * batch; i++)
        if (labels[idx[i]] < 0 || labels[idx[i]] >= p) return -1;
    double mean[p], squares[p]; /* per output, so that the loops over outputs vectorise */
    for (int64_t c = 0; c < chains; c++) {
        const float *pc = pred + c * batch * p;
        float *oc = out + c * batch * p;
        for (int64_t j = 0; j < p; j++) mean[j] = squares[j] = 0.0;
        for (int64_t s = 0; s < batch; s++) {
            for (int64_t j = 0; j < p; j++) mean[j] -= pc[s * p + j];
            mean[labels[idx[c * batch + s]]] += 1.0;
        }
        for (int64_t j = 0; j < p; j++) mean[j] /= (double)batch;
        for (int64_t s = 0; s < batch; s++) {
            const float *restrict row = pc + s * p;
            float *restrict residual = oc + s * p;
            for (int64_t j = 0; j < p; j++) {
                double r = -(double)row[j] - mean[j];
                squares[j] += r * r;
                residual[j] = (float)(scale * r);
            }
            /* the label's entry: its one-hot target adds 1 */
            int64_t label = labels[idx[c * batch + s]];
            double r = 1.0 - (double)row[label] - mean[label], r0 = -(double)row[label] - mean[label];
            squares[label] += r * r - r0 * r0;
            residual[label] = (float)(scale * r);
        }
        double total = 0.0;
        for (int64_t j = 0; j < p; j++) total += squares[j];
        loss[c] = (float)(0.5 * total / (double)batch);
    }
    return 0;
}

/* ---- Gaussian noise: 16 interleaved xoshiro128++ streams and the Box-Muller transform ---- */

#define LANES 16
#define NORMALS_PER_BLOCK (2 * LANES) /* one block: two draws of every lane, 16 Box-Muller pairs */
#define BLOCKS_PER_TILE 8 /* 256 numbers: small enough to stay in L1 beside the update's streams */
#define TILE (BLOCKS_PER_TILE * NORMALS_PER_BLOCK)

static inline uint32_t rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

/* One xoshiro128++ output of each lane; state is [4][LANES] words. */
static inline void next_lanes(uint32_t *restrict state, uint32_t *restrict out) {
    uint32_t *s0 = state, *s1 = state + LANES, *s2 = state + 2 * LANES, *s3 = state + 3 * LANES;
    for (int i = 0; i < LANES; i++) {
        out[i] = rotl(s0[i] + s3[i], 7) + s0[i];
        uint32_t t = s1[i] << 9;
        s2[i] ^= s0[i];
        s3[i] ^= s1[i];
        s1[i] ^= s2[i];
        s0[i] ^= s3[i];
        s2[i] ^= t;
        s3[i] = rotl(s3[i], 11);
    }
}

static inline float as_float(uint32_t x) { float f; memcpy(&f, &x, sizeof f); return f; }
static inline uint32_t as_bits(float f) { uint32_t x; memcpy(&x, &f, sizeof x); return x; }

/* -ln u for u in (0, 1]: u = 2^e m with m in [sqrt(1/2), sqrt(2)) (found by offsetting the bits,
 * without a branch), ln m = 2 atanh(f), f = (m - 1)/(m + 1), |f| < 0.172, by its series to f^11. */
static inline float minus_log(float u) {
    uint32_t shifted = as_bits(u) + (0x3F800000u - 0x3F3504F3u);
    float e = (float)((int32_t)(shifted >> 23) - 127);
    float m = as_float((shifted & 0x7FFFFFu) + 0x3F3504F3u);
    float f = (m - 1.0f) / (m + 1.0f);
    float s = f * f;
    float series = 1.0f + s * (1.0f / 3 + s * (1.0f / 5 + s * (1.0f / 7 + s * (1.0f / 9 + s * (1.0f / 11)))));
    return -(e * 0.693147182f + 2.0f * f * series);
}

static inline float flip_sign(float x, uint32_t flip) { return as_float(as_bits(x) ^ (flip << 31)); }

/* Box-Muller: r = sqrt(-2 ln u) with u = (x >> 8 + 1) / 2^24 in (0, 1], and the angle 2 pi (y >> 8) / 2^24
 * = q pi/2 + pi/4 + t: the top two bits give the quadrant q, the other 22 give t in [-pi/4, pi/4), where
 * short Taylor series of sin t and cos t suffice (to t^9 and t^10). With cos(pi/4 + t) = (cos t - sin t)
 * / sqrt 2 and sin(pi/4 + t) = (cos t + sin t) / sqrt 2, the 1/sqrt 2 goes into r = sqrt(-ln u). */
static inline void box_muller(uint32_t x, uint32_t y, float *cos_out, float *sin_out) {
    float r = __builtin_sqrtf(minus_log((float)(int32_t)((x >> 8) + 1u) * 5.9604645e-08f));
    uint32_t quadrant = y >> 30;
    float t = (float)((int32_t)((y >> 8) & 0x3FFFFFu) - 0x200000) * 2.3841858e-07f * 1.57079637f;
    float t2 = t * t;
    float s = t * (1.0f - t2 * (1.0f / 6 - t2 * (1.0f / 120 - t2 * (1.0f / 5040 - t2 * (1.0f / 362880)))));
    float c = 1.0f - t2 * (0.5f - t2 * (1.0f / 24 - t2 * (1.0f / 720 - t2 * (1.0f / 40320 - t2 * (1.0f / 3628800)))));
    float cos_octant = c - s, sin_octant = c + s;
    uint32_t swap = 0u - (quadrant & 1u); /* quadrants 1, 3: (cos, sin) <- (sin, cos) */
    float cq = as_float((as_bits(cos_octant) & ~swap) | (as_bits(sin_octant) & swap));
    float sq = as_float((as_bits(sin_octant) & ~swap) | (as_bits(cos_octant) & swap));
    *cos_out = r * flip_sign(cq, ((quadrant + 1u) >> 1) & 1u); /* negative in quadrants 1, 2 */
    *sin_out = r * flip_sign(sq, quadrant >> 1);                /* negative in quadrants 2, 3 */
}

/* One tile of standard normals: per block, x = next_lanes, y = next_lanes, and block[i] and
 * block[LANES + i] are the cosine and sine normals of the pair (x[i], y[i]). */
static void normal_tile(uint32_t *restrict state, float *restrict out) {
    uint32_t x[BLOCKS_PER_TILE][LANES], y[BLOCKS_PER_TILE][LANES];
    for (int b = 0; b < BLOCKS_PER_TILE; b++) {
        next_lanes(state, x[b]);
        next_lanes(state, y[b]);
    }
    for (int b = 0; b < BLOCKS_PER_TILE; b++) {
        float *block = out + b * NORMALS_PER_BLOCK;
        for (int i = 0; i < LANES; i++) box_muller(x[b][i], y[b][i], block + i, block + LANES + i);
    }
}

/* n standard normals; the stream advances by whole tiles, whatever n is. */
void normal_fill(uint32_t *state, float *out, int64_t n) {
    float tile[TILE];
    for (int64_t start = 0; start < n; start += TILE) {
        int64_t count = n - start < TILE ? n - start : TILE;
        normal_tile(state, tile);
        memcpy(out + start, tile, (size_t)count * sizeof(float));
    }
}

/* The SGLD step w <- w shrink + pull + grad_scale grad + noise_std N(0, I), in place, with the noise
 * of normal_fill drawn tile by tile. */
void sgld_update(float *restrict w, const float *restrict grad, const float *restrict pull, int64_t n, float shrink,
                 float grad_scale, float noise_std, uint32_t *restrict state) {
    float tile[TILE];
    for (int64_t start = 0; start < n; start += TILE) {
        int64_t count = n - start < TILE ? n - start : TILE;
        normal_tile(state, tile);
        float *wt = w + start;
        const float *gt = grad + start, *pt = pull + start;
        for (int64_t i = 0; i < count; i++) wt[i] = wt[i] * shrink + pt[i] + gt[i] * grad_scale + tile[i] * noise_std;
    }
}
