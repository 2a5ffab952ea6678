// tcgen05.mma harness kernel (sm_100a / sm_103a). harness/tcgen05.py fills in the template parts: the CTA
// group, and the one MMA statement of this form (kind, .ws, A from smem or TMEM, block scaling).
//
// One CTA (cta_group::1) or one cluster of two CTAs (cta_group::2) = one case; 128 threads per CTA. Each CTA
// copies its shared-memory image into a 1024-byte-aligned window and fences the async proxy; warp 0
// allocates Tensor Memory; C (when enable-input-d), A (when A comes from TMEM) are stored into TMEM raw with
// tcgen05.st; scale factors are copied from shared memory with tcgen05.cp; one thread issues the MMA and
// commits it to an mbarrier; every thread waits with a bounded spin (a hang becomes status 1, not a stuck
// GPU); each warp reads its 32 lanes back with tcgen05.ld.32x32b and writes every 32-bit cell out raw; warp 0
// deallocates. A sparse form's metadata is stored into its columns with the same tcgen05.st as C and A.
// Shapes, types and strides are runtime data (the instruction descriptor and the matrix
// descriptors), so one compiled kernel serves every case of a form.

#define CTA_GROUP {{CTA_GROUP}}

{{SMEM_WINDOW}}

struct CaseParams {
    unsigned long long image_offset;  // byte offset of this CTA's shared-memory image in `images`
    unsigned long long desc_a;        // matrix descriptors, start fields relative to the window
    unsigned long long desc_b;
    unsigned long long zero_mask;     // .ws zero-column mask descriptor
    unsigned long long sf_desc_a;     // block scaling: smem descriptors of the scale-factor tiles
    unsigned long long sf_desc_b;
    unsigned int image_bytes;         // multiple of 16
    unsigned int idesc;               // instruction descriptor
    unsigned int alloc_cols;          // TMEM columns to allocate (power of two, >= 32)
    unsigned int read_cols;           // TMEM columns to read back (multiple of 8)
    unsigned int enable_input_d;      // 1: D = A*B + D (C stored into TMEM first)
    unsigned int a_tmem_col;          // A from TMEM: first column of A
    unsigned int a_tmem_cols;         //   and how many columns to store (0: A is in shared memory)
    unsigned int sf_col_a;            // block scaling: TMEM columns of the scale factors
    unsigned int sf_col_b;
    unsigned int spin_limit;          // mbarrier polls before giving up (status 1)
    unsigned int sp_meta_col;         // .sp: TMEM column of the sparsity metadata (the MMA's [sp-meta-tmem])
    unsigned int sp_meta_cols;        //   and how many columns of it are stored (0: dense)
    unsigned int lane_mask[8];        // disable-output-lane forms: bit l % 32 of word 4 * cta + l / 32 masks lane l
};

{{DEVICE_HELPERS}}

extern "C" __global__ void __launch_bounds__(128, 1) {{CLUSTER_ATTR}}
{{KERNEL_NAME}}(const unsigned char* __restrict__ images, const CaseParams* __restrict__ params,
                const unsigned int* __restrict__ tmem_in, unsigned int* __restrict__ tmem_out,
                unsigned int* __restrict__ status)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ unsigned int tmem_base;
    __shared__ __align__(8) unsigned long long mbar;
    const unsigned int tid = threadIdx.x, warp = tid / 32u;
    const CaseParams p = params[blockIdx.x];

    const unsigned int window = fill_smem_window(smem_raw, images + p.image_offset, p.image_bytes, tid);

    if (warp == 0) {
        asm volatile("tcgen05.alloc.cta_group::" "{{CTA_GROUP}}" ".sync.aligned.shared::cta.b32 [%0], %1;\n"
                     :: "r"(smem_u32(&tmem_base)), "r"(p.alloc_cols) : "memory");
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::" "{{CTA_GROUP}}" ".sync.aligned;\n" ::: "memory");
    }
    if (tid == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" :: "r"(smem_u32(&mbar)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
    {{CTA_SYNC}}
    asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
    const unsigned int taddr = tmem_base;
    const unsigned int lane_base = (32u * warp) << 16;  // warp w may access TMEM lanes 32w .. 32w+31
    const unsigned long long cell0 = ((unsigned long long)blockIdx.x * 128ull + tid) * (unsigned long long)p.read_cols;

#ifdef TC_NO_TMEM_CHECK
    // a TMEM-checked form built by a toolchain without ptxas's check: Tensor Memory beyond the allocation is not
    // touched unchecked; the case reports that its observation was not made (kernel.py STATUS_NOT_OBSERVED)
    const bool skip = p.read_cols > p.alloc_cols;
#else
    const bool skip = false;
#endif

    // Tensor Memory as the case prepared it, raw, each thread its own lane: C in the accumulator columns when
    // enable-input-d, otherwise a poison no case produces (reference.py TMEM_POISON: a D cell the MMA did not write
    // fails the read-back), A and the sparsity metadata in theirs.
    if (!skip) {
        for (unsigned int c = 0; c < p.read_cols; c += 8u) {
            const unsigned int* v = tmem_in + cell0 + c;
            asm volatile("tcgen05.st.sync.aligned.32x32b.x8.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8};\n"
                         :: "r"(taddr + lane_base + c), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3]),
                            "r"(v[4]), "r"(v[5]), "r"(v[6]), "r"(v[7]) : "memory");
        }
        asm volatile("tcgen05.wait::st.sync.aligned;\n" ::: "memory");
    }
    asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
    {{CTA_SYNC}}
    asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");

    const unsigned long long window_field = (unsigned long long)((window >> 4) & 0x3FFFu);
    const unsigned long long desc_a = p.desc_a + window_field;
    const unsigned long long desc_b = p.desc_b + window_field;
    (void)desc_a;
    if ({{ISSUER}} && tid == 0 && !skip) {
        const unsigned int d_tmem = taddr;
        const unsigned int a_tmem = taddr + p.a_tmem_col;
        const unsigned int sfa = taddr + p.sf_col_a, sfb = taddr + p.sf_col_b;
        const unsigned int sp_meta = taddr + p.sp_meta_col;
        (void)a_tmem; (void)sfa; (void)sfb; (void)sp_meta;
        // scale factors: shared memory -> TMEM, issued by the MMA's thread (executed in issue order)
        {{SCALE_COPY}}
        {{MMA}}
        {{COMMIT}}
    }

    // Bounded wait: a tensor core that never completes costs this case, not the GPU.
    unsigned int done = 0, polls = 0;
    while (!skip && !done && polls < p.spin_limit) {
        asm volatile("{\n.reg .pred q;\nmbarrier.try_wait.parity.shared::cta.b64 q, [%1], 0;\nselp.u32 %0, 1, 0, q;\n}\n"
                     : "=r"(done) : "r"(smem_u32(&mbar)) : "memory");
        ++polls;
    }
    if (tid == 0) status[blockIdx.x] = skip ? 3u : done ? 0u : 1u;
    asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");

    if (done) {
        for (unsigned int c = 0; c < p.read_cols; c += 8u) {
            unsigned int r0, r1, r2, r3, r4, r5, r6, r7;
            asm volatile("tcgen05.ld.sync.aligned.32x32b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8];\n"
                         : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3), "=r"(r4), "=r"(r5), "=r"(r6), "=r"(r7)
                         : "r"(taddr + lane_base + c) : "memory");
            asm volatile("tcgen05.wait::ld.sync.aligned;\n" ::: "memory");
            unsigned int* o = tmem_out + cell0 + c;
            o[0] = r0; o[1] = r1; o[2] = r2; o[3] = r3; o[4] = r4; o[5] = r5; o[6] = r6; o[7] = r7;
        }
    }
    asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
    {{CTA_SYNC}}
    if (warp == 0) {
        asm volatile("tcgen05.dealloc.cta_group::" "{{CTA_GROUP}}" ".sync.aligned.b32 %0, %1;\n"
                     :: "r"(taddr), "r"(p.alloc_cols) : "memory");
    }
}
