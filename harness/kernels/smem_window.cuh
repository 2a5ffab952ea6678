// Shared by every harness kernel: kernel_source.py pastes it where a template names SMEM_WINDOW.
//
// The swizzle is anchored to shared-memory address bits, so the host models addresses relative to a
// 1024-byte-aligned window: align the window whatever the dynamic smem base is, copy this CTA's image into it
// (16 bytes per thread per step), and make the ordinary stores visible to the async proxy (the tensor core).
// Returns the window's shared-memory address; the caller synchronises the CTA before the MMA.
__device__ __forceinline__ unsigned int fill_smem_window(unsigned char* smem_raw, const unsigned char* image,
                                                         unsigned int image_bytes, unsigned int tid) {
    const unsigned int raw = (unsigned int)__cvta_generic_to_shared(smem_raw);
    const unsigned int window = (raw + 1023u) & ~1023u;
    const uint4* src = reinterpret_cast<const uint4*>(image);
    uint4* dst = reinterpret_cast<uint4*>(smem_raw + (window - raw));
    for (unsigned int i = tid; i < image_bytes / 16u; i += 128u) dst[i] = src[i];
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    return window;
}
