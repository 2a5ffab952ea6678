// wgmma.mma_async harness kernel (sm_90a). harness/families/wgmma/kernel.py fills in the template parts:
// the accumulator count, the A operand (descriptor or registers) and the asm statement of the variants.
//
// One CTA = one warpgroup = one case. The CTA copies its case's shared-memory image (built on the host from
// the layout model) into a 1024-byte-aligned window, fences the async proxy, completes the descriptors with
// the window's shared address, loads C into the accumulators, issues its variant's wgmma, and writes every
// accumulator register of every thread out raw.

{{SMEM_WINDOW}}

struct CaseParams {
    unsigned long long image_offset;  // byte offset of this case's image in `images` (16-byte aligned)
    unsigned long long desc_a;        // matrix descriptors whose start fields are relative to the window
    unsigned long long desc_b;
    unsigned int image_bytes;         // multiple of 16
    unsigned int variant;             // which compiled immediate combination to issue
    unsigned int scale_d;             // 0: D = A*B, 1: D = A*B + C
    unsigned int inject;              // fault injection for the robustness tests: 0 none, 1 trap,
                                      // 2 hang, 3 misaligned global load
};

extern "C" __global__ void __launch_bounds__(128, 1)
{{KERNEL_NAME}}(const unsigned char* __restrict__ images, const CaseParams* __restrict__ params,
                const unsigned int* __restrict__ a_regs, const unsigned int* __restrict__ c_regs,{{META_PARAM}}
                unsigned int* __restrict__ d_out)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned int tid = threadIdx.x;
    const CaseParams p = params[blockIdx.x];
    if (p.inject == 1u) asm volatile("trap;");
    if (p.inject == 2u) { for (;;) asm volatile("nanosleep.u32 1000;"); }
    if (p.inject == 3u) {
        unsigned int v;
        asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(images + 1) : "memory");
        if (v == 0x12345678u) d_out[0] = v;
    }

    const unsigned int window = fill_smem_window(smem_raw, images + p.image_offset, p.image_bytes, tid);
    __syncthreads();

    const unsigned long long window_field = (unsigned long long)((window >> 4) & 0x3FFFu);
    const unsigned long long desc_a = p.desc_a + window_field;
    const unsigned long long desc_b = p.desc_b + window_field;
    (void)desc_a;

    const unsigned long long slot = (unsigned long long)blockIdx.x * 128ull + tid;
    const unsigned int* c_at = c_regs + slot * {{ACC_REGS}}ull;  // this thread's C, then D: 8- or 16-byte aligned
    unsigned int* d_at = d_out + slot * {{ACC_REGS}}ull;
    {{A_REGS}}

    // One asm statement loads C into the accumulator registers it declares, issues the case's variant and stores D:
    // a uniform branch in PTX to one block per compiled immediate combination (none for an unknown variant), each
    // block fence, wgmma, commit; then wait 0 where the blocks meet. The accumulators are the statement's own
    // registers, not C++ operands moved by loops: NVRTC's optimizer has nothing to do on them (20-30% less
    // NVRTC time). A C++ switch of one asm statement per variant made NVRTC's optimizer merge every accumulator over
    // every branch (several times the compile time of the kernel itself); with the fence or the commit outside the
    // blocks ptxas 12.8 to 13.0 inject a warpgroup.arrive (info C7519); a wait in each block cost ptxas more time
    // (AsmOperands.dispatch in families/wgmma/kernel.py).
{{MMA_DISPATCH}}
}
