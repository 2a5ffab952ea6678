// sm_120a / sm_121a mma.sync kernels of the .kind:: forms and the sub-byte ldmatrix (harness/families/mma_sync/
// kernel_sm120.py fills in the parts and packs the launch). Compiled and SASS-checked; no sm_120 GPU has run them.
//
// One CTA = one warp = one case. The warp copies its case's shared-memory image (the sub-byte ldmatrix rows) into a
// 1024-byte-aligned window, loads A, B, C, the sparse metadata and the two scale registers from global memory (packed
// on the host by harness/families/mma_sync/reference_sm120.py from block_scaled.py's models), sets every output
// register to the poison, issues its variant (one mma, or one ldmatrix) and writes out every output register, raw.

struct CaseParams {
    unsigned long long image_offset;  // byte offset of this case's image in `images` (16-byte aligned)
    unsigned int image_bytes;         // multiple of 16
    unsigned int variant;             // which compiled form (immediate combination) to issue
};

extern "C" __global__ void __launch_bounds__(32, 1)
{{KERNEL_NAME}}(const unsigned char* __restrict__ images, const CaseParams* __restrict__ params,
                const unsigned int* __restrict__ a_in, const unsigned int* __restrict__ b_in,
                const unsigned int* __restrict__ c_in, const unsigned int* __restrict__ e_in,
                const unsigned int* __restrict__ sf_in, const unsigned int* __restrict__ ld_rows,
                unsigned int* __restrict__ d_out)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned int lane = threadIdx.x;
    const CaseParams p = params[blockIdx.x];
    const unsigned long long slot = (unsigned long long)blockIdx.x * 32ull + lane;

    const unsigned int raw = (unsigned int)__cvta_generic_to_shared(smem_raw);
    const unsigned int window = (raw + 1023u) & ~1023u;
    const uint4* src = reinterpret_cast<const uint4*>(images + p.image_offset);
    uint4* dst = reinterpret_cast<uint4*>(smem_raw + (window - raw));
#pragma unroll 1
    for (unsigned int i = lane; i < p.image_bytes / 16u; i += 32u) dst[i] = src[i];
    __syncthreads();
    const unsigned int row = window + ld_rows[slot];  // this lane's ldmatrix row address
    (void)row;

    unsigned int a[{{A_WORDS}}], b[{{B_WORDS}}], c[{{C_WORDS}}];
    for (int i = 0; i < {{A_WORDS}}; ++i) a[i] = a_in[slot * {{A_WORDS}}ull + i];
    for (int i = 0; i < {{B_WORDS}}; ++i) b[i] = b_in[slot * {{B_WORDS}}ull + i];
    for (int i = 0; i < {{C_WORDS}}; ++i) c[i] = c_in[slot * {{C_WORDS}}ull + i];
    const unsigned int e = e_in[slot], sfa = sf_in[slot * 2ull], sfb = sf_in[slot * 2ull + 1ull];
    (void)e; (void)sfa; (void)sfb;
    unsigned int d[{{D_WORDS}}];
    for (int i = 0; i < {{D_WORDS}}; ++i) d[i] = {{POISON}}u;  // poisoned: an unwritten output shows

    // One asm statement: a uniform branch in PTX to the block of the case's variant (none for an unknown variant,
    // which leaves the outputs poisoned).
{{DISPATCH}}

    for (int i = 0; i < {{D_WORDS}}; ++i) d_out[slot * {{D_WORDS}}ull + i] = d[i];
}
