// Host program: print what CUTLASS's own SM100 (tcgen05 / UMMA) descriptor builders produce, as one JSON document.
//
//   "idesc"     : instruction descriptors from UMMA::make_instr_desc / make_instr_desc_block_scaled (templates) and
//                 from filling the raw UMMA::InstrDescriptor / InstrDescriptorBlockScaled bitfields at run time;
//                 each row lists the inputs next to the 32-bit value.
//   "smem"      : UMMA::make_umma_desc<Major>(tensor) over CuTe shared-memory tiles built from every UMMA layout atom,
//                 with the descriptor's fields and the tile's element -> bit-address map (row-major over (mn, k)).
//   "zero_mask" : UMMA::make_column_zero_mask<int, 3, CTA_M, CTA_N>(conv_q, cta_coord_q, num_pixels_skip_left).
//   "idesc_sparse": sparse instruction descriptors as CUTLASS's sparse UMMA traits build them: make_instr_desc<...,
//                 is_sparse = true> / make_instr_desc_block_scaled<..., is_sparse = true>, then
//                 make_runtime_instr_desc<true>(desc, sparse_id2) (id2 = the low bit of the metadata TMEM column,
//                 mma_traits_sm100.hpp's mma_unpack) and make_runtime_instr_desc_block_scaled<true>.
//
// Nothing here re-implements NVIDIA's logic: the values come from the headers; this file only enumerates inputs.
#include <cstdint>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <type_traits>

// make_umma_desc reads the shared-memory address of the tile through cast_smem_ptr_to_uint, which on the host has
// no shared window. Give it one: a 256 KiB buffer aligned to 2^18 plays the CTA's shared memory, so the low 18 bits
// of a host address are the shared-memory address (and CuTe's swizzle, which acts on those bits, sees the same).
static const char* g_smem_base = nullptr;
static inline size_t __cvta_generic_to_shared(const void* p) { return (size_t)((const char*)p - g_smem_base); }
#define CUTE_CVTA_GENERIC_TO_SHARED_ACTIVATED 1

#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm100.hpp>
#include <cute/arch/mma_sm100_desc.hpp>
#include <cutlass/version.h>

using namespace cute;

alignas(1 << 18) static char g_smem[1 << 18];

static bool g_first = true;
static void sep() { if (!g_first) printf(",\n"); g_first = false; }

// ------------------------------------------------------------------------------------------------ type names
template <class T> constexpr const char* tname();
template <> constexpr const char* tname<tfloat32_t>() { return "tf32"; }
template <> constexpr const char* tname<half_t>() { return "f16"; }
template <> constexpr const char* tname<bfloat16_t>() { return "bf16"; }
template <> constexpr const char* tname<float_e4m3_t>() { return "e4m3"; }
template <> constexpr const char* tname<float_e5m2_t>() { return "e5m2"; }
template <> constexpr const char* tname<cutlass::detail::float_e2m3_unpacksmem_t>() { return "e2m3"; }
template <> constexpr const char* tname<cutlass::detail::float_e3m2_unpacksmem_t>() { return "e3m2"; }
template <> constexpr const char* tname<cutlass::detail::float_e2m1_unpacksmem_t>() { return "e2m1"; }
template <> constexpr const char* tname<float_e2m1_t>() { return "e2m1"; }
template <> constexpr const char* tname<int8_t>() { return "s8"; }
template <> constexpr const char* tname<uint8_t>() { return "u8"; }
template <> constexpr const char* tname<float>() { return "f32"; }
template <> constexpr const char* tname<int32_t>() { return "s32"; }
template <> constexpr const char* tname<float_ue8m0_t>() { return "ue8m0"; }
template <> constexpr const char* tname<float_ue4m3_t>() { return "ue4m3"; }

template <class... Ts> struct TL {};

// ------------------------------------------------------------------------------------------------ idesc (templates)
// Build cost: the template builders take their inputs as template arguments, so each combination is one instantiation
// of CUTLASS's function whatever we do; what made this section slow was our own per-combination wrapper functions
// (thousands of them, each compiled and optimized). Now our code is instantiated once per type triple: the combinations
// are a constexpr table (Combos) expanded with an index_sequence, make_instr_desc / make_instr_desc_block_scaled
// (constexpr) fill static tables in the compiler's constant evaluator, and plain non-template loops print them (the
// union's 32-bit value is read at run time, where GCC defines the pun). Only make_runtime_instr_desc<...>() runs per
// combination at run time: it reads the union as uint32_t, which a constant expression may not.

// One row: [src, kind, atype, btype, dtype, M, N, transpose_a, transpose_b, negate_a, negate_b, saturate, max_shift,
//           scale_type, a_sf_id, b_sf_id, k96, value]
static void row(const char* src, const char* kind, const char* a, const char* b, const char* c, int M, int N,
                int ta, int tb, int na, int nb, int sat, int ms, const char* sf, int asf, int bsf, int k96, uint32_t v) {
  sep();
  printf("[\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",%d,%d,%d,%d,%d,%d,%d,%d,\"%s\",%d,%d,%d,%u]", src, kind, a, b, c, M, N,
         ta, tb, na, nb, sat, ms, sf, asf, bsf, k96, v);
}

constexpr UMMA::Major KM = UMMA::Major::K, MNM = UMMA::Major::MN;
constexpr UMMA::ScaleIn ONE = UMMA::ScaleIn::One, NEG = UMMA::ScaleIn::Neg;

// The template inputs of one make_instr_desc / make_instr_desc_block_scaled call.
struct Combo {
  int M, N;
  UMMA::Major am, bm;
  UMMA::ScaleIn an, bn;
  UMMA::Saturate sat;
  UMMA::MaxShift ms;
};
struct Combos {
  Combo c[96];  // more rows than this is a compile error (out-of-bounds write in a constant expression)
  int n;
  constexpr void add(int M, int N, UMMA::Major am, UMMA::Major bm, UMMA::ScaleIn an, UMMA::ScaleIn bn,
                     UMMA::Saturate sat = UMMA::Saturate::False, UMMA::MaxShift ms = UMMA::MaxShift::NoShift) {
    c[n++] = Combo{M, N, am, bm, an, bn, sat, ms};
  }
};

// Per type triple, in row order. cta_group::1: M 64/128, N step 8 from 8; cta_group::2: M 128/256 (N from 16);
// .ws: M 32/64/128, N 64/128/256. sat_ok (i8): saturate instead of negate.
constexpr Combos plain_combos(bool sat_ok) {
  Combos out{};
  struct { int M, N; bool ws; } const mns[] = {{64, 8, false},   {64, 256, true},   {128, 24, false}, {128, 136, false},
                                               {128, 64, true},  {256, 16, false},  {256, 256, false}, {32, 128, true}};
  for (auto mn : mns) {
    out.add(mn.M, mn.N, KM, KM, ONE, ONE);
    out.add(mn.M, mn.N, MNM, KM, ONE, ONE);
    out.add(mn.M, mn.N, KM, MNM, ONE, ONE);
    out.add(mn.M, mn.N, MNM, MNM, ONE, ONE);
    if (!sat_ok) {
      out.add(mn.M, mn.N, KM, KM, NEG, ONE);
      out.add(mn.M, mn.N, KM, KM, ONE, NEG);
      out.add(mn.M, mn.N, MNM, MNM, NEG, NEG);
    } else {
      out.add(mn.M, mn.N, KM, KM, ONE, ONE, UMMA::Saturate::True);
    }
    if (mn.ws) {
      out.add(mn.M, mn.N, KM, KM, ONE, ONE, UMMA::Saturate::False, UMMA::MaxShift::MaxShift8);
      out.add(mn.M, mn.N, KM, KM, ONE, ONE, UMMA::Saturate::False, UMMA::MaxShift::MaxShift16);
      out.add(mn.M, mn.N, KM, MNM, ONE, ONE, UMMA::Saturate::False, UMMA::MaxShift::MaxShift32);
    }
  }
  return out;
}
constexpr Combos kPlain[2] = {plain_combos(false), plain_combos(true)};

// The run-time loop over one type triple's table (not a template: instantiated once).
static void print_plain(const char* kind, const char* a, const char* b, const char* c, const Combos& cs,
                        const UMMA::InstrDescriptor* d, const uint64_t* rt) {
  for (int i = 0; i < cs.n; ++i) {
    const Combo& k = cs.c[i];
    // the runtime form CUTLASS hands to the MMA: the descriptor in the upper 32 bits
    if (uint32_t(rt[i] >> 32) != uint32_t(d[i])) { fprintf(stderr, "runtime idesc differs\n"); exit(3); }
    row("make_instr_desc", kind, a, b, c, k.M, k.N, int(k.am), int(k.bm), int(k.an), int(k.bn), int(k.sat),
        int(k.ms), "", 0, 0, 0, uint32_t(d[i]));
  }
}

template <class A, class B, class C, bool SatOk, size_t... I>
void plain_types(const char* kind, std::index_sequence<I...>) {
  constexpr const Combos& P = kPlain[SatOk];
  static constexpr UMMA::InstrDescriptor d[] = {
      UMMA::make_instr_desc<A, B, C, P.c[I].M, P.c[I].N, P.c[I].am, P.c[I].bm, P.c[I].an, P.c[I].bn, P.c[I].sat, false,
                            P.c[I].ms>()...};
  const uint64_t rt[] = {UMMA::make_runtime_instr_desc<A, B, C, P.c[I].M, P.c[I].N, P.c[I].am, P.c[I].bm, P.c[I].an,
                                                       P.c[I].bn, P.c[I].sat, false, P.c[I].ms>()...};
  print_plain(kind, tname<A>(), tname<B>(), tname<C>(), P, d, rt);
}

template <class A, class... Bs, class C, bool SatOk>
void plain_row(const char* kind, TL<Bs...>, C*, std::bool_constant<SatOk>) {
  (plain_types<A, Bs, C, SatOk>(kind, std::make_index_sequence<kPlain[SatOk].n>{}), ...);
}
template <class... As, class... Bs, class C, bool SatOk = false>
void plain_grid(const char* kind, TL<As...>, TL<Bs...> bs, C* c, std::bool_constant<SatOk> s = {}) {
  (plain_row<As>(kind, bs, c, s), ...);
}

// Block-scaled: the template builder, then the scale-factor ids CUTLASS derives from the TMEM addresses of the scale
// factors (make_runtime_instr_desc_block_scaled: bits 30-31 of each address) and the K = 96 bit that SM103's
// mma_unpack sets (k_size_ = 1).
constexpr Combos bs_combos() {
  Combos out{};
  struct { int M, N; } const mns[] = {{128, 8}, {128, 248}, {256, 16}, {256, 256}, {128, 128}};
  for (auto mn : mns) {
    out.add(mn.M, mn.N, KM, KM, ONE, ONE);
    out.add(mn.M, mn.N, MNM, KM, ONE, ONE);
    out.add(mn.M, mn.N, KM, MNM, ONE, ONE);
    out.add(mn.M, mn.N, MNM, MNM, NEG, NEG);
    out.add(mn.M, mn.N, KM, KM, NEG, ONE);
    out.add(mn.M, mn.N, KM, KM, ONE, NEG);
  }
  return out;
}
constexpr Combos kBs = bs_combos();

static void print_bs(const char* kind, const char* a, const char* b, const char* sf,
                     const UMMA::InstrDescriptorBlockScaled* ds) {
  for (int i = 0; i < kBs.n; ++i) {
    const Combo& k = kBs.c[i];
    auto d = ds[i];
    row("make_instr_desc_block_scaled", kind, a, b, "f32", k.M, k.N, int(k.am), int(k.bm), int(k.an), int(k.bn),
        0, 0, sf, 0, 0, 0, uint32_t(d));
    if (k.am == KM && k.bm == KM && k.an == ONE && k.bn == ONE) {
      for (uint32_t asf = 0; asf < 4; ++asf)
        for (uint32_t bsf = 0; bsf < 4; ++bsf) {
          uint64_t rt = UMMA::make_runtime_instr_desc_block_scaled(d, (asf << 30) | 0x40u, (bsf << 30) | 0x48u);
          row("make_runtime_instr_desc_block_scaled", kind, a, b, "f32", k.M, k.N, 0, 0, 0, 0, 0, 0, sf, int(asf),
              int(bsf), 0, uint32_t(rt >> 32));
        }
      auto k96 = d;
      k96.k_size_ = 1;
      row("k_size_", kind, a, b, "f32", k.M, k.N, 0, 0, 0, 0, 0, 0, sf, 0, 0, 1, uint32_t(k96));
    }
  }
}

template <class A, class B, class SF, size_t... I>
void bs_types(const char* kind, std::index_sequence<I...>) {
  static constexpr UMMA::InstrDescriptorBlockScaled d[] = {
      UMMA::make_instr_desc_block_scaled<A, B, float, SF, kBs.c[I].M, kBs.c[I].N, kBs.c[I].am, kBs.c[I].bm,
                                         kBs.c[I].an, kBs.c[I].bn>()...};
  print_bs(kind, tname<A>(), tname<B>(), tname<SF>(), d);
}

template <class A, class... Bs, class SF>
void bs_row(const char* kind, TL<Bs...>, SF*) { (bs_types<A, Bs, SF>(kind, std::make_index_sequence<kBs.n>{}), ...); }
template <class... As, class... Bs, class SF>
void bs_grid(const char* kind, TL<As...>, TL<Bs...> bs, SF* sf) { (bs_row<As>(kind, bs, sf), ...); }

// Raw bitfields at run time: every M the field can hold that the ISA or CUTLASS mention, every N step 8. The format
// codes come from CUTLASS's to_UMMAFormat / to_CFormat / to_ScaleFormat; the loops are not templates.
static void raw_plain(const char* kind, const char* a, const char* b, const char* c, uint8_t af, uint8_t bf,
                      uint8_t cf) {
  for (int M : {32, 64, 128, 256})
    for (int N = 8; N <= 256; N += 8)
      for (int t = 0; t < 4; ++t) {
        UMMA::InstrDescriptor d = {};
        d.desc_ = 0;
        d.a_format_ = af;
        d.b_format_ = bf;
        d.c_format_ = cf;
        d.m_dim_ = M >> 4;
        d.n_dim_ = N >> 3;
        d.a_major_ = t & 1;
        d.b_major_ = (t >> 1) & 1;
        row("InstrDescriptor", kind, a, b, c, M, N, t & 1, (t >> 1) & 1, 0, 0, 0, 0, "", 0, 0, 0, uint32_t(d));
      }
}

static void raw_bs_run(const char* kind, const char* a, const char* b, const char* sf, uint8_t af, uint8_t bf,
                       uint8_t sff) {
  for (int M : {128, 256})
    for (int N = 8; N <= 256; N += 8) {
      UMMA::InstrDescriptorBlockScaled d = {};
      d.desc_ = 0;
      d.a_format_ = af;
      d.b_format_ = bf;
      d.scale_format_ = sff;
      d.m_dim_ = M >> 4;
      d.n_dim_ = N >> 3;
      row("InstrDescriptorBlockScaled", kind, a, b, "f32", M, N, 0, 0, 0, 0, 0, 0, sf, 0, 0, 0, uint32_t(d));
    }
}

template <class A, class B, class SF>
void raw_bs(const char* kind) {
  raw_bs_run(kind, tname<A>(), tname<B>(), tname<SF>(), uint8_t(UMMA::to_UMMAFormat<A>()),
             uint8_t(UMMA::to_UMMAFormat<B>()), uint8_t(UMMA::to_ScaleFormat<SF>()));
}

template <class A, class... Bs, class C>
void raw_plain_row(const char* kind, TL<Bs...>, C*) {
  (raw_plain(kind, tname<A>(), tname<Bs>(), tname<C>(), uint8_t(UMMA::to_UMMAFormat<A>()),
             uint8_t(UMMA::to_UMMAFormat<Bs>()), uint8_t(UMMA::to_CFormat<C>())), ...);
}
template <class... As, class... Bs, class C>
void raw_plain_grid(const char* kind, TL<As...>, TL<Bs...> bs, C* c) { (raw_plain_row<As>(kind, bs, c), ...); }

using F8F6F4 = TL<float_e4m3_t, float_e5m2_t, cutlass::detail::float_e2m3_unpacksmem_t,
                  cutlass::detail::float_e3m2_unpacksmem_t, cutlass::detail::float_e2m1_unpacksmem_t>;

static void emit_idesc() {
  printf("\"idesc\": [\n");
  g_first = true;
  plain_grid("tf32", TL<tfloat32_t>{}, TL<tfloat32_t>{}, (float*)nullptr);
  plain_grid("f16", TL<half_t>{}, TL<half_t>{}, (float*)nullptr);
  plain_grid("f16", TL<half_t>{}, TL<half_t>{}, (half_t*)nullptr);
  plain_grid("f16", TL<bfloat16_t>{}, TL<bfloat16_t>{}, (float*)nullptr);
  plain_grid("f8f6f4", F8F6F4{}, F8F6F4{}, (float*)nullptr);
  plain_grid("f8f6f4", TL<float_e4m3_t>{}, TL<float_e4m3_t, float_e5m2_t>{}, (half_t*)nullptr);
  plain_grid("i8", TL<int8_t, uint8_t>{}, TL<int8_t, uint8_t>{}, (int32_t*)nullptr, std::true_type{});
  bs_grid("mxf8f6f4", F8F6F4{}, F8F6F4{}, (float_ue8m0_t*)nullptr);
  bs_grid("mxf4", TL<float_e2m1_t>{}, TL<float_e2m1_t>{}, (float_ue8m0_t*)nullptr);
  bs_grid("mxf4nvf4", TL<float_e2m1_t>{}, TL<float_e2m1_t>{}, (float_ue8m0_t*)nullptr);
  bs_grid("mxf4nvf4", TL<float_e2m1_t>{}, TL<float_e2m1_t>{}, (float_ue4m3_t*)nullptr);
  raw_plain_grid("tf32", TL<tfloat32_t>{}, TL<tfloat32_t>{}, (float*)nullptr);
  raw_plain_grid("f16", TL<half_t, bfloat16_t>{}, TL<half_t, bfloat16_t>{}, (float*)nullptr);
  raw_plain_grid("f16", TL<half_t>{}, TL<half_t>{}, (half_t*)nullptr);
  raw_plain_grid("f8f6f4", F8F6F4{}, F8F6F4{}, (float*)nullptr);
  raw_plain_grid("i8", TL<int8_t, uint8_t>{}, TL<int8_t, uint8_t>{}, (int32_t*)nullptr);
  raw_bs<float_e4m3_t, cutlass::detail::float_e2m1_unpacksmem_t, float_ue8m0_t>("mxf8f6f4");
  raw_bs<float_e2m1_t, float_e2m1_t, float_ue8m0_t>("mxf4");
  raw_bs<float_e2m1_t, float_e2m1_t, float_ue4m3_t>("mxf4nvf4");
  printf("\n]");
}

// ------------------------------------------------------------------------------------------------ smem descriptors
template <class T, UMMA::Major MAJ, int R, int K, class Atom>
void smem_tile(const char* atom_name, int start) {
  auto layout = tile_to_shape(Atom{}, Shape<Int<R>, Int<K>>{});
  T* p = reinterpret_cast<T*>(g_smem + start);
  auto tensor = make_tensor(make_smem_ptr(p), layout);
  UMMA::SmemDescriptor d = UMMA::make_umma_desc<MAJ>(tensor);
  using SW = get_swizzle_t<decltype(tensor)>;  // CuTe's swizzle on shared-memory byte addresses
  constexpr int bits = sizeof_bits_v<T>;
  sep();
  printf("{\"atom\":\"%s\",\"major\":\"%s\",\"bits\":%d,\"type\":\"%s\",\"rows\":%d,\"cols\":%d,\"start\":%d,"
         "\"swizzle_bms\":[%d,%d,%d],\"value\":\"0x%016llx\",\"fields\":{\"start_address\":%u,"
         "\"leading_byte_offset\":%u,\"stride_byte_offset\":%u,\"version\":%u,\"base_offset\":%u,\"lbo_mode\":%u,"
         "\"layout_type\":%u},\"bit_address\":[",
         atom_name, MAJ == KM ? "K" : "MN", bits, tname<T>(), R, K, start, int(SW::num_bits), int(SW::num_base),
         int(SW::num_shft), (unsigned long long)uint64_t(d), unsigned(d.start_address_),
         unsigned(d.leading_byte_offset_), unsigned(d.stride_byte_offset_), unsigned(d.version_),
         unsigned(d.base_offset_), unsigned(d.lbo_mode_), unsigned(d.layout_type_));
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < K; ++k) {
      long off = long(tensor.layout()(r, k));  // element offset from the tile start, before the swizzle
      long bit = off * bits;
      long byte = long(start) + (bit >> 3);
      long swz = long(SW::apply(uint32_t(byte)));
      printf("%s%ld", (r || k) ? "," : "", swz * 8 + (bit & 7));
    }
  printf("]}");
}

// The atoms: K-major interleave/32B/64B/128B, MN-major interleave/32B/64B/128B and 128B with 32-byte atoms (tf32).
// Shapes: (rows, K) of one operand tile. K-major swizzled tiles are one swizzle row wide along K (what one
// descriptor addresses); interleaved K-major and MN-major tiles span several core matrices both ways.
template <class T>
void smem_type(int start) {
  constexpr int E = 128 / sizeof_bits_v<T>;  // elements per 16-byte chunk
  smem_tile<T, KM, 64, 2 * E, UMMA::Layout_K_INTER_Atom<T>>("K_INTER", start);
  smem_tile<T, KM, 128, 4 * E, UMMA::Layout_K_INTER_Atom<T>>("K_INTER", start + 1024);
  smem_tile<T, KM, 64, 2 * E, UMMA::Layout_K_SW32_Atom<T>>("K_SW32", start);
  smem_tile<T, KM, 128, 4 * E, UMMA::Layout_K_SW64_Atom<T>>("K_SW64", start + 512);
  smem_tile<T, KM, 64, 8 * E, UMMA::Layout_K_SW128_Atom<T>>("K_SW128", start);
  smem_tile<T, KM, 128, 8 * E, UMMA::Layout_K_SW128_Atom<T>>("K_SW128", start + 2048);
  smem_tile<T, MNM, 2 * E, 16, UMMA::Layout_MN_INTER_Atom<T>>("MN_INTER", start);
  smem_tile<T, MNM, 8 * E, 32, UMMA::Layout_MN_INTER_Atom<T>>("MN_INTER", start + 1024);
  smem_tile<T, MNM, 4 * E, 16, UMMA::Layout_MN_SW32_Atom<T>>("MN_SW32", start);
  smem_tile<T, MNM, 8 * E, 32, UMMA::Layout_MN_SW64_Atom<T>>("MN_SW64", start + 512);
  smem_tile<T, MNM, 8 * E, 16, UMMA::Layout_MN_SW128_Atom<T>>("MN_SW128", start);
  smem_tile<T, MNM, 16 * E, 32, UMMA::Layout_MN_SW128_Atom<T>>("MN_SW128", start + 3072);
}

static void emit_smem() {
  printf("\"smem\": [\n");
  g_first = true;
  smem_type<float>(0);
  smem_type<half_t>(4096);
  smem_type<uint8_t>(8192);
  smem_type<float_e2m1_t>(16384);
  // tf32's 128B swizzle with 32-byte atoms (MN-major only: make_umma_desc refuses it for K-major)
  smem_tile<float, MNM, 32, 8, UMMA::Layout_MN_SW128_32B_Atom<float>>("MN_SW128_32B", 0);
  smem_tile<float, MNM, 64, 16, UMMA::Layout_MN_SW128_32B_Atom<float>>("MN_SW128_32B", 4096);
  smem_tile<float, MNM, 128, 8, UMMA::Layout_MN_SW128_32B_Atom<float>>("MN_SW128_32B", 1024);
  printf("\n]");
}

// ------------------------------------------------------------------------------------------------ zero-column mask
template <int CTA_M, int CTA_N>
void zmask_grid() {
  for (int conv_q : {3, 5, 17, 64, 200, 300})
    for (int cta : {0, 1, 3})
      for (int skip : {-2, -1, 0, 1, 2, 4}) {
        auto masks = UMMA::make_column_zero_mask<int, 3, CTA_M, CTA_N>(conv_q, cta, skip);
        for (int s = 0; s < 3; ++s) {
          uint64_t v = uint64_t(masks[s].uri[0]) | (uint64_t(masks[s].uri[1]) << 32);
          sep();
          printf("{\"m\":%d,\"n\":%d,\"conv_q\":%d,\"cta_coord_q\":%d,\"skip_left\":%d,\"s\":%d,\"value\":\"0x%016llx\","
                 "\"start_count\":[%d,%d,%d,%d],\"first_span\":%u,\"nzm\":%u,\"skip_span\":%u,\"use_span\":%u,"
                 "\"shift\":%u}",
                 CTA_M, CTA_N, conv_q, cta, skip, s, (unsigned long long)v, masks[s].start_count_[0],
                 masks[s].start_count_[1], masks[s].start_count_[2], masks[s].start_count_[3],
                 unsigned(masks[s].first_span_), unsigned(masks[s].nzm_), unsigned(masks[s].skip_span_),
                 unsigned(masks[s].use_span_), unsigned(masks[s].shift_));
        }
      }
}

static void emit_zero_mask() {
  printf("\"zero_mask\": [\n");
  g_first = true;
  zmask_grid<128, 64>();
  zmask_grid<128, 256>();
  zmask_grid<64, 128>();
  zmask_grid<32, 64>();
  zmask_grid<32, 256>();
  printf("\n]");
}


// ------------------------------------------------------------------------------------------------ sparse idesc
// One row: [src, kind, atype, btype, dtype, M, N, transpose_a, transpose_b, scale_type, sparse_id2, value]
static void srow(const char* src, const char* kind, const char* a, const char* b, const char* c, int M, int N,
                 int ta, int tb, const char* sf, int id2, uint32_t v) {
  sep();
  printf("[\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",%d,%d,%d,%d,\"%s\",%d,%u]", src, kind, a, b, c, M, N, ta, tb, sf, id2, v);
}

template <class A, class B, class C, int M, int N, UMMA::Major am, UMMA::Major bm>
void sp_one(const char* kind, int max_id2) {
  auto d = UMMA::make_instr_desc<A, B, C, M, N, am, bm, ONE, ONE, UMMA::Saturate::False, true>();
  srow("make_instr_desc", kind, tname<A>(), tname<B>(), tname<C>(), M, N, int(am), int(bm), "", 0, uint32_t(d));
  for (int id2 = 0; id2 <= max_id2; ++id2) {
    uint64_t rt = UMMA::make_runtime_instr_desc<true>(d, uint16_t(id2), 0x40u);
    srow("make_runtime_instr_desc", kind, tname<A>(), tname<B>(), tname<C>(), M, N, int(am), int(bm), "", id2,
         uint32_t(rt >> 32));
  }
}

template <class A, class B, class C>
void sp_types(const char* kind, int max_id2) {
  sp_one<A, B, C, 64, 8, KM, KM>(kind, max_id2);
  sp_one<A, B, C, 128, 64, KM, KM>(kind, max_id2);
  sp_one<A, B, C, 128, 256, KM, MNM>(kind, max_id2);
  sp_one<A, B, C, 256, 128, KM, KM>(kind, max_id2);
  sp_one<A, B, C, 256, 16, MNM, KM>(kind, max_id2);
}

template <class A, class B, class SF, int M, int N>
void sp_bs_one(const char* kind) {
  auto d = UMMA::make_instr_desc_block_scaled<A, B, float, SF, M, N, KM, KM, ONE, ONE, true>();
  srow("make_instr_desc_block_scaled", kind, tname<A>(), tname<B>(), "f32", M, N, 0, 0, tname<SF>(), 0, uint32_t(d));
  uint64_t rt = UMMA::make_runtime_instr_desc_block_scaled<true>(d, 0x40u, 0x48u, uint16_t(0), 0x50u);
  srow("make_runtime_instr_desc_block_scaled", kind, tname<A>(), tname<B>(), "f32", M, N, 0, 0, tname<SF>(), 0,
       uint32_t(rt >> 32));
}

static void emit_idesc_sparse() {
  printf("\"idesc_sparse\": [\n");
  g_first = true;
  sp_types<tfloat32_t, tfloat32_t, float>("tf32", 1);
  sp_types<half_t, half_t, float>("f16", 1);
  sp_types<bfloat16_t, bfloat16_t, float>("f16", 1);
  sp_types<half_t, half_t, half_t>("f16", 1);
  sp_types<float_e4m3_t, float_e5m2_t, float>("f8f6f4", 0);
  sp_types<int8_t, uint8_t, int32_t>("i8", 0);
  sp_bs_one<float_e4m3_t, float_e4m3_t, float_ue8m0_t, 128, 64>("mxf8f6f4");
  sp_bs_one<float_e2m1_t, float_e2m1_t, float_ue8m0_t, 256, 128>("mxf4");
  sp_bs_one<float_e2m1_t, float_e2m1_t, float_ue4m3_t, 128, 8>("mxf4nvf4");
  printf("\n]");
}

int main() {
  g_smem_base = g_smem;
  printf("{\"cutlass_version\": \"%d.%d.%d\",\n", CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH);
  emit_idesc();
  printf(",\n");
  emit_smem();
  printf(",\n");
  emit_zero_mask();
  printf(",\n");
  emit_idesc_sparse();
  printf("\n}\n");
  return 0;
}
