// mma.sync / mma.sp harness kernel (sm_90a). harness/families/mma_sync/kernel.py fills in the template parts: the
// register counts of A, B, C and D, how A and B reach their registers, and the asm statement of the variants.
//
// One CTA = one warp = one case. The warp copies its case's shared-memory image (the ldmatrix tiles, built on the
// host from the ldmatrix model) into a 1024-byte-aligned window, loads A and B into registers (from global memory, as
// the fragment model packed them, or with ldmatrix [.trans] from the tiles, each lane handing the row address the
// host solved for it), loads C and the sparse metadata, sets every D register to the poison, issues its variant's mma
// and writes out every D register and every A and B register as loaded, raw.

struct CaseParams {
    unsigned long long image_offset;  // byte offset of this case's image in `images` (16-byte aligned)
    unsigned int image_bytes;         // multiple of 16
    unsigned int variant;             // which compiled form (immediate combination) to issue
    unsigned int a_path;              // 0: A's registers from a_in; 1: ldmatrix; 2: ldmatrix .trans
    unsigned int b_path;              // the same for B
};

extern "C" __global__ void __launch_bounds__(32, 1)
{{KERNEL_NAME}}(const unsigned char* __restrict__ images, const CaseParams* __restrict__ params,
                const unsigned int* __restrict__ a_in, const unsigned int* __restrict__ b_in,
                const unsigned int* __restrict__ c_in, const unsigned int* __restrict__ e_in,
                const unsigned int* __restrict__ ld_rows,{{ST_IN_PARAM}}
                unsigned int* __restrict__ d_out, unsigned int* __restrict__ a_out, unsigned int* __restrict__ b_out{{ST_OUT_PARAM}})
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned int lane = threadIdx.x;
    const CaseParams p = params[blockIdx.x];
    const unsigned long long slot = (unsigned long long)blockIdx.x * 32ull + lane;

    // the swizzle is a function of shared-memory address bits: the host's tiles are relative to a 1024-byte window
    const unsigned int raw = (unsigned int)__cvta_generic_to_shared(smem_raw);
    const unsigned int window = (raw + 1023u) & ~1023u;
    const uint4* src = reinterpret_cast<const uint4*>(images + p.image_offset);
    uint4* dst = reinterpret_cast<uint4*>(smem_raw + (window - raw));
#pragma unroll 1  // a few hundred bytes: an unrolled copy only costs ptxas time
    for (unsigned int i = lane; i < p.image_bytes / 16u; i += 32u) dst[i] = src[i];
    __syncthreads();
    const unsigned int a_row = window + ld_rows[slot * 2ull];      // this lane's ldmatrix row address for A
    const unsigned int b_row = window + ld_rows[slot * 2ull + 1ull];  // and for B
    (void)a_row; (void)b_row;

    unsigned int a[{{A_WORDS}}], b[{{B_WORDS}}];
{{A_LOAD}}
{{B_LOAD}}
{{OPERANDS}}
    const unsigned int e = e_in[slot];  // sparse metadata (unused by dense forms)
    (void)e;

    // One asm statement: a uniform branch in PTX to the block of the case's variant (none for an unknown variant,
    // which leaves D poisoned), each block one mma.
{{MMA_DISPATCH}}

{{STORES}}{{ST_STORE}}
}
