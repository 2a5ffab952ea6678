// tc_tap.cuh: the descriptor tap. A kernel (CUDA C++, or CuTe DSL / any kernel that can store to a debug buffer)
// records each 64-bit shared-memory matrix descriptor it issues, with its 32-bit instruction descriptor (tcgen05;
// 0 for wgmma) and a tag of the user's choosing; harness/tap.py reads the buffer back, decodes every value and diffs
// it against the layout the user declares for the tag (harness.api.check_descriptor).
//
// Buffer (global memory; harness.tap.new_buffer(capacity) makes its initial bytes, to copy to the device before the
// launch): a 16-byte header, then `capacity` records of 16 bytes, little-endian:
//     header: uint32 count (records asked for: may exceed capacity), uint32 capacity, uint64 magic TC_TAP_MAGIC
//     record: uint32 tag, uint32 idesc, uint64 desc
// A record takes its slot with one atomicAdd on count; a record past capacity is not written but still counted, so
// the reader knows how many were lost (harness/tap.py refuses such a buffer rather than check part of it).
// Include it with NVRTC's or nvcc's -I <the folder harness.tap.include_dir() names>.
#pragma once

#define TC_TAP_MAGIC 0x3130305041544354ull  // the bytes "TCTAP001"

struct tc_tap_record {
    unsigned int tag;
    unsigned int idesc;
    unsigned long long desc;
};

struct tc_tap_buffer {
    unsigned int count;
    unsigned int capacity;
    unsigned long long magic;
    tc_tap_record records[1];  // `capacity` of them
};

// Record one descriptor from the calling thread. `buf` may be null (the tap compiled in but off).
__device__ __forceinline__ void tc_tap(tc_tap_buffer* buf, unsigned int tag, unsigned long long desc,
                                       unsigned int idesc = 0u) {
    if (buf == nullptr) return;
    const unsigned int slot = atomicAdd(&buf->count, 1u);
    if (slot < buf->capacity) {
        // one 16-byte store: the record is never seen half written
        const unsigned long long lo = (unsigned long long)tag | ((unsigned long long)idesc << 32);
        asm volatile("st.global.v2.u64 [%0], {%1, %2};"
                     :: "l"(&buf->records[slot]), "l"(lo), "l"(desc) : "memory");
    }
}

// Record once per warpgroup (the first thread of each group of 128 in a 1-D block): every thread of a warpgroup
// issues the same wgmma / tcgen05.mma descriptor, and one record of it is enough.
__device__ __forceinline__ void tc_tap_warpgroup(tc_tap_buffer* buf, unsigned int tag, unsigned long long desc,
                                                 unsigned int idesc = 0u) {
    if ((threadIdx.x & 127u) == 0u) tc_tap(buf, tag, desc, idesc);
}
