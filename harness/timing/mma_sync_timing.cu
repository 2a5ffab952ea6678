// mma.sync / mma.sp timing kernels (sm_90a). harness/timing/source.py fills in the template parts: the register
// types and counts of A, B and the accumulator, how a lane's A, B and metadata words become its registers
// (LOAD_OPERANDS) and the one mma of this form on accumulator array D (MMA(D, SALT)), C and D the same registers.
// SALT is xored into every A and B register where ptxas expands the mma into more than one tensor-core
// instruction (e4m3: conversions to f16, two HMMA from zero, adds into C): there A*B does not depend on C, and
// with A and B the same in every mma ptxas would convert and multiply once, out of the loop. SALT is
// (step & p.sink), 0 at run time but unknown to the compiler, so every mma converts all of A and B and
// multiplies, as in a GEMM whose operands change (one LOP3 a register more); elsewhere SALT is unused.
//
// The operands live in registers for the whole kernel: the host builds one image of 32-bit words (A's words of
// the 32 lanes, then B's, then each lane's metadata word), every warp loads its lane's words once. Nothing is
// in shared memory; the throughput kernel asks for dynamic shared memory only so that one CTA fits an SM.
//
//   {{KERNEL_NAME}}_lat:  one CTA, one warp, one accumulator: LAT_CHAIN mma per repetition between two clock64
//                         reads, each mma's C the previous one's D. The chain runs on across repetitions (the
//                         first mma of a repetition waits for the last of the one before), so in the steady state
//                         a repetition's clocks are LAT_CHAIN latencies: the host divides by LAT_CHAIN. Then an
//                         empty clock64 pair (the measurement's own overhead). Lane 0 writes both.
//   {{KERNEL_NAME}}_tput: WARPS warps per CTA, one CTA per SM; each warp loops over CHAINS mma into CHAINS
//                         independent accumulators per iteration (no mma waits for another of its iteration).
//                         Thread 0 records %smid, clock64 and %globaltimer before (after a CTA barrier) and after
//                         (after every warp has read its accumulators and a barrier).
// The accumulators go to `sink` only when p.sink is set (never by the host): the mma cannot be dropped.

#define WARPS {{WARPS}}
#define CHAINS {{CHAINS}}
#define LAT_CHAIN {{LAT_CHAIN}}
#define A_REGS {{A_REGS}}
#define B_REGS {{B_REGS}}
#define ACC_REGS {{ACC_REGS}}

struct TimingParams {
    unsigned int image_bytes;  // A words [32 lanes][A_WORDS], B words [32][B_WORDS], metadata [32]
    unsigned int iters;        // throughput: loop iterations (CHAINS mma each, per warp)
    unsigned int warmup;       // latency: repetitions not recorded
    unsigned int reps;         // latency: repetitions recorded
    unsigned int sink;         // never set by the host: keeps the accumulators live
    unsigned int pad[3];
};

{{DEVICE_HELPERS}}

#define MMA(D, SALT) {{MMA_BODY}}

// the xor of a lane's accumulator words: reading every register waits for the mma that writes it
#define ACC_XOR(D, S) _Pragma("unroll") for (int i_ = 0; i_ < ACC_REGS; ++i_) { S ^= {{ACC_BITS}}; }

extern "C" __global__ void __launch_bounds__(32, 1)
{{KERNEL_NAME}}_lat(const unsigned char* __restrict__ images, const TimingParams* __restrict__ params,
                    unsigned long long* __restrict__ out, unsigned int* __restrict__ sink)
{
    const unsigned int lane = threadIdx.x & 31u;
    const TimingParams p = *params;
    const unsigned int* __restrict__ words = reinterpret_cast<const unsigned int*>(images);
    {{AB_TYPE}} a[A_REGS], b[B_REGS];
    unsigned int e;
{{LOAD_OPERANDS}}
    (void)e;
    {{ACC_TYPE}} d[ACC_REGS];
#pragma unroll
    for (int i = 0; i < ACC_REGS; ++i) d[i] = ({{ACC_TYPE}})0;

#pragma unroll 1
    for (unsigned int r = 0; r < p.warmup + p.reps; ++r) {
        const unsigned long long t0 = clk();
#pragma unroll
        for (int i = 0; i < LAT_CHAIN; ++i) { MMA(d, (r * LAT_CHAIN + i) & p.sink); }
        const unsigned long long t1 = clk();
        const unsigned long long e0 = clk();
        const unsigned long long e1 = clk();
        if (lane == 0 && r >= p.warmup) {
            out[r - p.warmup] = t1 - t0;
            out[p.reps + r - p.warmup] = e1 - e0;
        }
    }
    if (p.sink) {
        unsigned int s = 0;
        ACC_XOR(d, s);
        sink[lane] = s;
    }
}

extern "C" __global__ void __launch_bounds__(32 * WARPS, 1)
{{KERNEL_NAME}}_tput(const unsigned char* __restrict__ images, const TimingParams* __restrict__ params,
                     unsigned long long* __restrict__ out, unsigned int* __restrict__ sink)
{
    const unsigned int tid = threadIdx.x, lane = tid & 31u;
    const TimingParams p = *params;
    const unsigned int* __restrict__ words = reinterpret_cast<const unsigned int*>(images);
    {{AB_TYPE}} a[A_REGS], b[B_REGS];
    unsigned int e;
{{LOAD_OPERANDS}}
    (void)e;
    {{ACC_TYPE}} d[CHAINS][ACC_REGS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
#pragma unroll
        for (int i = 0; i < ACC_REGS; ++i) d[c][i] = ({{ACC_TYPE}})0;

    __syncthreads();
    unsigned long long t0 = 0, g0 = 0;
    if (tid == 0) { g0 = gtimer(); t0 = clk(); }
#pragma unroll 1
    for (unsigned int it = 0; it < p.iters; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) { MMA(d[c], (it * CHAINS + c) & p.sink); }
    }
    unsigned int s = 0;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) { ACC_XOR(d[c], s); }
    // a barrier that takes s: every warp's reads of its accumulators (each waiting for its last mma) come first
    (void)__syncthreads_or(s);
    if (tid == 0) {
        const unsigned long long t1 = clk(), g1 = gtimer();
        unsigned long long* o = out + (unsigned long long)blockIdx.x * 5ull;
        o[0] = smid(); o[1] = t0; o[2] = t1; o[3] = g0; o[4] = g1;
    }
    if (p.sink) sink[blockIdx.x * 32u * WARPS + tid] = s;
}
