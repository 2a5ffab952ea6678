// NVIDIA's tcgen05 data layouts, evaluated on the host from CUTLASS's CuTe headers, printed as one JSON document.
// Read by tests/test_tcgen05_layouts_vs_cutlass.py (through tests/oracles/cutlass_cpp.py). Only CuTe layouts and
// type traits are used (no device code runs); every value is what CUTLASS's own kernels would compute.
//
//   acc          tmem_frg / tmem_frg_ws accumulators: D[row, col] of one CTA -> (lane, 32-bit column, 16-bit half)
//   a_tmem       A from Tensor Memory (UMMA_TS): A[row, k] -> (lane, column, byte)
//   sf_tmem      tmem_sf_frg (block-scale factors): (mn, sf index, replica) -> (lane, column, byte)
//   sf_iter      tmem_sf_frg as CUTLASS's SM103 (K = 96) mainloop walks it, one factor a K index (its MmaIterShapeSFA):
//                (mn, factor index, replica) -> (lane, column, byte); MMA t starts at index 3t (VS 32) / 6t (VS 16)
//   sf_smem      Sm1xxBlkScaledConfig's scale-factor layout over 4 K blocks (one atom along K, as one MMA's smem
//                tile holds it) and over 8 (two atoms along K, as K = 96 .block16's 6 factors need):
//                (mn, k block) -> byte
//   utccp        tcgen05.cp atoms: source row r, bit b, replica -> (lane, bit in the row of columns)
//   sw128_32b    Layout_MN_SW128_32B_Atom tiled to a tile, its swizzled byte addresses and make_umma_desc strides
//   e2m1_pairs   cutlass::Array<float_e2m1_t, 8> storage word with only element i set to 0x7
//   subbyte      how f8f6f4 4/6-bit operands are typed for shared memory (element bits, smem allocation, UMMA format)
//   meta         tmem_e_frg / tmem_e_frg_ws (sparse metadata): E[row, k] of one MMA (logical K of the sparse MMA) ->
//                (lane, column, bit): the first metadata bit of logical element k (its sparse_elem<S, uint8_t> view
//                gives each logical element 8/S bits: a 4-bit nibble per 2:4 / 1:2 / 4:8 chunk)
#include <cstdio>
#include <string>
#include <vector>

#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm100.hpp>
#include <cute/atom/copy_traits_sm100.hpp>
#include <cutlass/detail/sm100_blockscaled_layout.hpp>

using namespace cute;

static std::string out;
static void emit(const char* s) { out += s; }
static void emitf(const char* fmt, long a, long b = 0, long c = 0, long d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  out += buf;
}

// tmem_ptr<T> + offset -> raw 32-bit TMEM address: lane in [16,24), column in [0,16), sub-word index in the top bits
template <class T>
static uint32_t tmem_addr(int offset) { return (make_tmem_ptr<T>(0u) + offset).get(); }

// ---- accumulators -----------------------------------------------------------------------------------------------
template <class V, class Frg, int M, int N>
static void acc_one(const char* kind, int nsm, int bits) {
  auto t = Frg::make(make_shape(make_shape(Int<M>{}, Int<N>{}), _1{}, _1{}));
  out += std::string("{\"kind\":\"") + kind + "\",";
  emitf("\"nsm\":%ld,\"m\":%ld,\"n\":%ld,\"bits\":%ld,\"cells\":[", nsm, M, N, bits);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      uint32_t a = tmem_addr<V>(t.layout()(make_coord(m, n), 0, 0));
      emitf("%ld,%ld,%ld,", (a >> 16) & 0xFF, a & 0xFFFF, a >> 31);
    }
  out.pop_back();
  emit("]},");
}

template <class V, int M, int N>
static void acc_1sm(int bits) { acc_one<V, UMMA::tmem_frg_1sm<V, uint32_t>, M, N>("1sm", 1, bits); }
template <class V, int M, int N>
static void acc_2sm(int bits) { acc_one<V, UMMA::tmem_frg_2sm<V, uint32_t>, M, N>("2sm", 2, bits); }
template <class V, int M, int N>
static void acc_ws(int bits) { acc_one<V, UMMA::tmem_frg_ws_1sm<V, uint32_t>, M, N>("ws", 1, bits); }

// ---- A in Tensor Memory -----------------------------------------------------------------------------------------
template <class V, class Frg, int M, int K>
static void a_one(const char* name, int bits) {
  auto t = Frg::make(make_shape(make_shape(Int<M>{}, Int<K>{}), _1{}, _1{}));
  out += std::string("{\"frg\":\"") + name + "\",";
  emitf("\"m\":%ld,\"k\":%ld,\"bits\":%ld,\"cells\":[", M, K, bits);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) {
      uint32_t a = tmem_addr<V>(t.layout()(make_coord(m, k), 0, 0));
      // sub-word index: rotr(offset, log2(32/bits)) keeps it in the top bits
      int shift = 0; for (int r = 32 / bits; r > 1; r >>= 1) ++shift;
      uint32_t sub = shift ? (a >> (32 - shift)) : 0;
      emitf("%ld,%ld,%ld,", (a >> 16) & 0xFF, a & 0xFFFF, sub);
    }
  out.pop_back();
  emit("]},");
}

// ---- scale factors in Tensor Memory -----------------------------------------------------------------------------
template <int VS, int NSF, int NSM, bool IsA, UMMA::TmemAllocMode Mode, int MN>
static void sf_one(const char* mode) {
  using Frg = UMMA::tmem_sf_frg<float_ue8m0_t, VS, NSM, IsA, Mode>;
  auto t = Frg::make(make_shape(make_shape(Int<MN>{}, make_shape(Int<VS>{}, Int<NSF>{})), _1{}, _1{}));
  auto L = t.layout();
  constexpr int M0 = decltype(size<0, 0>(L))::value;  // MN x replicas
  out += std::string("{\"mode\":\"") + mode + "\",\"operand\":\"" + (IsA ? "A" : "B") + "\",";
  emitf("\"vs\":%ld,\"nsf\":%ld,\"nsm\":%ld,\"mn\":%ld,", VS, NSF, NSM, MN);
  emitf("\"replicas\":%ld,\"cells\":[", M0 / MN);
  for (int i = 0; i < M0; ++i)  // i = mn + MN * replica (CuTe's colexicographic order of the first mode)
    for (int s = 0; s < NSF; ++s)
      for (int v = 0; v < VS; v += VS - 1) {  // the VS elements of one block share one factor (stride 0)
        uint32_t a = tmem_addr<float_ue8m0_t>(L(make_coord(i, make_coord(v, s)), 0, 0));
        if (v) continue;
        emitf("%ld,%ld,%ld,", (a >> 16) & 0xFF, a & 0xFFFF, a >> 30);
      }
  out.pop_back();
  emit("]},");
}

// ---- scale factors as the SM103 mainloop addresses them (cutlass/gemm/collective/sm103_blockscaled_mma_warpspecialized
// .hpp: MmaIterShapeSFA = ((32,4),(SFVecSize,1)), MMA_M/128, SF_MMA_K/SFVecSize), a tmem_sf_frg; the K = 96 MMA t takes
// the address of factor index 3t (VS = 32) or 6t (VS = 16), its byte in the address's top bits) ---------------------
template <int VS, int NK, int NSM, bool IsA, int MN>
static void sf_iter_one() {
  using Frg = UMMA::tmem_sf_frg<float_ue8m0_t, VS, NSM, IsA, UMMA::TmemAllocMode::ScaleFactorDuplicated4by1>;
  auto t = Frg::make(make_shape(make_shape(Int<MN>{}, make_shape(Int<VS>{}, _1{})), _1{}, Int<NK>{}));
  auto L = t.layout();
  constexpr int M0 = decltype(size<0, 0>(L))::value;  // MN x replicas
  out += std::string("{\"operand\":\"") + (IsA ? "A" : "B") + "\",";
  emitf("\"vs\":%ld,\"nk\":%ld,\"nsm\":%ld,\"mn\":%ld,", VS, NK, NSM, MN);
  emitf("\"replicas\":%ld,\"cells\":[", M0 / MN);
  for (int i = 0; i < M0; ++i)
    for (int g = 0; g < NK; ++g) {
      uint32_t a = tmem_addr<float_ue8m0_t>(L(make_coord(i, make_coord(0, 0)), 0, g));
      emitf("%ld,%ld,%ld,", (a >> 16) & 0xFF, a & 0xFFFF, a >> 30);
    }
  out.pop_back();
  emit("]},");
}

// ---- scale factors in shared memory (the layout TMA fills and tcgen05.cp reads) ------------------------------------
template <int VS>
static void sf_smem(int M, int K) {
  using Cfg = cutlass::detail::Sm1xxBlockScaledConfig<VS>;
  auto L = Cfg::tile_atom_to_shape_SFA(make_shape(M, 128, K, 1));
  emitf("{\"vs\":%ld,\"m\":%ld,\"k\":%ld,\"bytes\":[", VS, M, K);
  for (int m = 0; m < M; ++m)
    for (int kb = 0; kb < K / VS; ++kb) emitf("%ld,", L(m, kb * VS, 0));
  out.pop_back();
  emit("]},");
}

// ---- tcgen05.cp atoms: ValID maps (row, bit, replica) of the source to a TMEM bit address -----------------------
template <class Op>
static void utccp_one(const char* name) {
  using VID = typename Copy_Traits<Op>::ValID;
  VID v{};
  constexpr int R = decltype(size<0>(v))::value, B = decltype(size<1>(v))::value;
  constexpr int RK = decltype(rank(v))::value;
  int P = 1;
  if constexpr (RK == 3) P = decltype(size<2>(VID{}))::value;
  out += std::string("{\"op\":\"") + name + "\",";
  emitf("\"rows\":%ld,\"bits\":%ld,\"replicas\":%ld,\"cells\":[", R, B, P);
  for (int p = 0; p < P; ++p)
    for (int r = 0; r < R; ++r)
      for (int b = 0; b < B; b += 32) {
        long a;
        if constexpr (RK == 3) a = v(r, b, p); else a = v(r, b);
        emitf("%ld,%ld,", a >> 21, a & ((1 << 21) - 1));  // lane, bit in the lane's row of columns
      }
  out.pop_back();
  emit("]},");
}

// ---- 128B swizzle with 32-byte atomicity (MN-major only) ----------------------------------------------------------
template <int MN, int K>
static void sw128_32b() {
  using T = tfloat32_t;
  auto lay = tile_to_shape(UMMA::Layout_MN_SW128_32B_Atom<T>{}, make_shape(Int<MN>{}, Int<K>{}));
  alignas(1024) static T buf[MN * K * 2];
  auto tensor = make_tensor(make_smem_ptr(buf), lay);
  // make_umma_desc<Major::MN>'s reading of the strides (it needs a device smem address, so its steps are repeated
  // here): in 16-byte units, divide the tile into (8 chunks along MN) x (4 K-rows for SWIZZLE_128B_BASE32B);
  // LBO = stride<0,1> (next MN atom), SBO = stride<1,1> (next group of K-rows)
  auto u128 = recast<uint128_t const>(tensor);
  constexpr UMMA::LayoutType LT = UMMA::layout_type(u128);
  constexpr int KATOM = LT == UMMA::LayoutType::SWIZZLE_128B_BASE32B ? 4 : 8;
  auto canon = logical_divide(layout(u128), Tile<Layout<_8>, Layout<Int<KATOM>>>{});
  long lbo = MN > 32 ? long(stride<0, 1>(canon)) * 16 : 0, sbo = K > KATOM ? long(stride<1, 1>(canon)) * 16 : 0;
  emitf("{\"dtype\":\"tf32\",\"mn\":%ld,\"k\":%ld,\"lbo\":%ld,\"sbo\":%ld,", MN, K, lbo, sbo);
  emitf("\"layout_type\":%ld,\"k_rows_per_atom\":%ld,\"bytes\":[", long(LT), KATOM);
  for (int mn = 0; mn < MN; ++mn)
    for (int k = 0; k < K; ++k)
      emitf("%ld,", long(reinterpret_cast<char*>(&tensor(mn, k)) - reinterpret_cast<char*>(buf)));
  out.pop_back();
  emit("]},");
}

template <class T>
static void subbyte_one(const char* name) {
  // the SmemAllocType rule of the sm100 (blockscaled) collectives: sub-byte f8f6f4 operands get uint8_t storage
  using Alloc = cute::conditional_t<(cute::sizeof_bits_v<T> < 8), uint8_t, T>;
  out += std::string("{\"type\":\"") + name + "\",";
  emitf("\"value_bits\":%ld,\"smem_alloc_bits\":%ld,", cute::sizeof_bits_v<T>, cute::sizeof_bits_v<Alloc>);
  emitf("\"umma_format\":%ld},", long(UMMA::to_UMMAFormat<T>()));
}

// ---- packed 4-bit pairs (mxf4 kinds): which nibble of a byte holds the lower-indexed e2m1 ----------------------
static void nibbles() {
  emit("\"e2m1_pairs\":[");
  for (int i = 0; i < 8; ++i) {
    cutlass::Array<cutlass::float_e2m1_t, 8> a;
    a.clear();
    a[i] = cutlass::float_e2m1_t::bitcast(0x7);
    emitf("%ld,", long(a.raw_data()[0]));
  }
  out.pop_back();
  emit("]");
}


// ---- sparse metadata in Tensor Memory ----------------------------------------------------------------------------
// tmem_ptr<sparse_elem<S, uint8_t>> addresses logical elements of 8/S bits: rotr(offset, log2(32 / (8/S))) keeps the
// element index within the 32-bit column in the top bits. Printed: lane, column, first bit of the element's metadata.
template <class Frg, int S, int M, int K>
static void meta_one(const char* frg, int bits) {
  auto t = Frg::make(make_shape(make_shape(Int<M>{}, Int<K>{}), _1{}, _1{}));
  using E = sparse_elem<S, uint8_t>;
  constexpr int shift = tmem_ptr<E>::OffsetShift;  // log2(elements per 32-bit column)
  out += std::string("{\"frg\":\"") + frg + "\",";
  emitf("\"m\":%ld,\"k\":%ld,\"bits\":%ld,\"elem_bits_x2\":%ld,", M, K, bits, 16 / S);
  emit("\"cells\":[");
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) {
      uint32_t a = (make_tmem_ptr<E>(0u) + int(t.layout()(make_coord(m, k), 0, 0))).get();
      uint32_t sub = a >> (32 - shift);             // element index within the column
      long bit = long(sub) * 32 / (1 << shift);    // its first bit
      emitf("%ld,%ld,%ld,", (a >> 16) & ((1 << (16 - shift)) - 1), a & 0xFFFF, bit);
    }
  out.pop_back();
  emit("]},");
}

int main() {
  emit("{\"acc\":[");
  acc_1sm<float, 128, 64>(32); acc_1sm<float, 64, 64>(32); acc_1sm<half_t, 128, 32>(16); acc_1sm<half_t, 64, 32>(16);
  acc_2sm<float, 128, 64>(32); acc_2sm<float, 64, 64>(32); acc_2sm<float, 64, 32>(32); acc_2sm<half_t, 64, 32>(16);
  acc_2sm<float, 128, 256>(32);
  acc_ws<float, 128, 64>(32); acc_ws<float, 64, 64>(32); acc_ws<float, 64, 128>(32); acc_ws<float, 32, 64>(32);
  acc_ws<float, 32, 256>(32); acc_ws<half_t, 64, 64>(16); acc_ws<half_t, 32, 128>(16);
  out.pop_back();
  emit("],\"a_tmem\":[");
  a_one<half_t, UMMA::tmem_frg_1sm<half_t, half_t, UMMA::TmemAllocMode::NonInterleaved>, 128, 16>("1sm", 16);
  a_one<half_t, UMMA::tmem_frg_1sm<half_t, half_t, UMMA::TmemAllocMode::NonInterleaved>, 64, 16>("1sm", 16);
  a_one<uint8_t, UMMA::tmem_frg_1sm<uint8_t, uint8_t, UMMA::TmemAllocMode::NonInterleaved>, 128, 32>("1sm", 8);
  a_one<uint8_t, UMMA::tmem_frg_1sm<uint8_t, uint8_t, UMMA::TmemAllocMode::NonInterleaved>, 64, 32>("1sm", 8);
  a_one<tfloat32_t, UMMA::tmem_frg_1sm<tfloat32_t, tfloat32_t, UMMA::TmemAllocMode::NonInterleaved>, 128, 8>("1sm", 32);
  a_one<half_t, UMMA::tmem_frg_2sm<half_t, half_t, UMMA::TmemAllocMode::Duplicated>, 64, 16>("2sm_duplicated", 16);
  out.pop_back();
  emit("],\"sf_tmem\":[");
  constexpr auto X41 = UMMA::TmemAllocMode::ScaleFactorDuplicated4by1;
  constexpr auto X22 = UMMA::TmemAllocMode::ScaleFactorDuplicated2by2;
  sf_one<32, 1, 1, true, X41, 128>("4x1"); sf_one<32, 1, 1, false, X41, 128>("4x1");
  sf_one<32, 1, 1, false, X41, 256>("4x1"); sf_one<32, 2, 1, true, X41, 128>("4x1");
  sf_one<32, 2, 1, false, X41, 256>("4x1"); sf_one<16, 4, 1, true, X41, 128>("4x1");
  sf_one<16, 4, 1, false, X41, 128>("4x1"); sf_one<16, 4, 2, false, X41, 256>("4x1");
  sf_one<32, 1, 2, true, X41, 128>("4x1"); sf_one<32, 1, 2, false, X41, 256>("4x1");
  sf_one<32, 1, 2, false, X22, 128>("2x2"); sf_one<32, 1, 2, false, X22, 256>("2x2");
  sf_one<16, 4, 2, false, X22, 256>("2x2");
  out.pop_back();
  emit("],\"sf_iter\":[");
  // two K = 96 MMAs' factors: 12 of VS = 16; 8 of VS = 32 (6, rounded up to whole 4-byte groups, as CuTe needs);
  // one CTA (A, B), and a pair's B and A (each CTA's 128 rows, all N <= 128 columns)
  sf_iter_one<16, 12, 1, true, 128>(); sf_iter_one<16, 12, 1, false, 128>(); sf_iter_one<32, 8, 1, true, 128>();
  sf_iter_one<32, 8, 1, false, 128>(); sf_iter_one<16, 12, 2, false, 128>(); sf_iter_one<32, 8, 2, true, 128>();
  out.pop_back();
  emit("],\"sf_smem\":[");
  sf_smem<32>(256, 128); sf_smem<16>(256, 64);  // K = 4 blocks: one atom along K, so 128-row blocks are 512 B apart
  sf_smem<16>(256, 128); sf_smem<32>(256, 256);  // K = 8 blocks: two atoms along K (K = 96 .block16's 6 factors)
  out.pop_back();
  emit("],\"utccp\":[");
  utccp_one<SM100_UTCCP_4x32dp128bit_1cta>("32x128b.warpx4");
  utccp_one<SM100_UTCCP_128dp128bit_1cta>("128x128b");
  out.pop_back();
  emit("],\"sw128_32b\":[");
  sw128_32b<32, 8>(); sw128_32b<128, 8>(); sw128_32b<64, 16>();
  out.pop_back();
  emit("],\"subbyte\":[");
  subbyte_one<cutlass::detail::float_e2m1_unpacksmem_t>("e2m1_unpacksmem");
  subbyte_one<cutlass::detail::float_e2m3_unpacksmem_t>("e2m3_unpacksmem");
  subbyte_one<cutlass::detail::float_e3m2_unpacksmem_t>("e3m2_unpacksmem");
  out.pop_back();
  emit("],\"meta\":[");
  meta_one<UMMA::tmem_e_frg<tfloat32_t>, 4, 128, 16>("1sm", 32);
  meta_one<UMMA::tmem_e_frg<half_t>, 8, 128, 32>("1sm", 16);
  meta_one<UMMA::tmem_e_frg<uint8_t>, 8, 128, 64>("1sm", 8);
  meta_one<UMMA::tmem_e_frg<float_e2m1_t>, 16, 128, 128>("1sm", 4);
  meta_one<UMMA::tmem_e_frg_ws<tfloat32_t>, 4, 128, 16>("ws", 32);
  meta_one<UMMA::tmem_e_frg_ws<half_t>, 8, 128, 32>("ws", 16);
  meta_one<UMMA::tmem_e_frg_ws<uint8_t>, 8, 128, 64>("ws", 8);
  out.pop_back();
  emit("],");
  nibbles();
  emit("}\n");
  std::fputs(out.c_str(), stdout);
  return 0;
}
