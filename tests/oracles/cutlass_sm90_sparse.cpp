// NVIDIA's layout of the wgmma.mma_async.sp sparsity metadata, evaluated on the host from CUTLASS's CuTe headers
// (cute/atom/mma_traits_sm90_gmma_sparse.hpp), printed as one JSON document. Read by
// tests/test_wgmma_sp_vs_cutlass.py through tests/oracles/cutlass_cpp.py. Only CuTe layouts and type traits are
// used; nothing runs on a device.
//
//   elayouts   ELayout_64x32 / 64x16 / 64x64: for thread t and value v of its metadata, the element of the
//              logical 64 x K matrix A (offset m + 64 * k) the value describes
//   traits     for one MMA op of every sparse type pairing, A source and accumulator: which ELayout its
//              MMA_Traits name, how many logical A elements one metadata byte covers (ValTypeE's sparsity),
//              A's sparsity (ValTypeA), its logical K, and how many metadata values a thread holds
//   a_rs       A from registers (the RS ops' ALayout): for thread t and value v (one sparse element, half of a
//              packed element's bits), the element of the logical 64 x K matrix A (offset m + 64 * k)
#include <cstdio>
#include <string>
#include <type_traits>

#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm90_gmma_sparse.hpp>

using namespace cute;
namespace SP = cute::SM90::GMMA::SPARSE;
namespace G = cute::SM90::GMMA;

static std::string out;
static void emitf(const char* fmt, long a, long b = 0, long c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  out += buf;
}

template <class L>
static void elayout(const char* name) {
  L layout{};
  constexpr int T = size<0>(L{});
  constexpr int V = size<1>(L{});
  out += std::string("\"") + name + "\":{";
  emitf("\"threads\":%ld,\"values\":%ld,\"offset\":[", T, V);
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < V; ++v) emitf("%ld,", layout(t, v));
  out.pop_back();
  out += "]},";
}

template <class E>
static const char* elayout_name() {
  if (std::is_same_v<E, G::ELayout_64x32>) return "64x32";
  if (std::is_same_v<E, G::ELayout_64x16>) return "64x16";
  if (std::is_same_v<E, G::ELayout_64x64>) return "64x64";
  return "other";
}

template <class Op>
static void trait(const char* name) {
  using Tr = MMA_Traits<Op>;
  out += std::string("\"") + name + "\":{\"elayout\":\"" + elayout_name<typename Tr::ELayout>() + "\",";
  emitf("\"e_sparsity\":%ld,\"a_sparsity\":%ld,\"k\":%ld,", Tr::ValTypeE::sparsity, Tr::ValTypeA::sparsity,
        size<2>(typename Tr::Shape_MNK{}));
  emitf("\"e_values\":%ld},", size<1>(typename Tr::ELayout{}));
}

template <class Op>
static void a_rs(const char* name) {
  using L = typename MMA_Traits<Op>::ALayout;
  L layout{};
  constexpr int V = size<1>(L{});
  out += std::string("\"") + name + "\":{";
  emitf("\"values\":%ld,\"offset\":[", V);
  for (int t = 0; t < 128; ++t)
    for (int v = 0; v < V; ++v) emitf("%ld,", layout(t, v));
  out.pop_back();
  out += "]},";
}

#define MAJ G::Major::K, G::Major::K
#define SC G::ScaleIn::One, G::ScaleIn::One
#define S0 G::SparseSel::Zero

int main() {
  out += "{\"elayouts\":{";
  elayout<G::ELayout_64x32>("64x32");
  elayout<G::ELayout_64x16>("64x16");
  elayout<G::ELayout_64x64>("64x64");
  out.pop_back();
  out += "},\"traits\":{";
  trait<SP::GMMA_64x8x32_F16F16F16_SS<MAJ, SC, S0>>("f16.f16.f16.SS");
  trait<SP::GMMA_64x8x32_F16F16F16_RS<MAJ, SC, S0>>("f16.f16.f16.RS");
  trait<SP::GMMA_64x8x32_F32F16F16_SS<MAJ, SC, S0>>("f32.f16.f16.SS");
  trait<SP::GMMA_64x8x32_F32BF16BF16_SS<MAJ, SC, S0>>("f32.bf16.bf16.SS");
  trait<SP::GMMA_64x8x32_F32BF16BF16_RS<MAJ, SC, S0>>("f32.bf16.bf16.RS");
  trait<SP::GMMA_64x8x16_F32TF32TF32_SS_TN<SC, S0>>("f32.tf32.tf32.SS");
  trait<SP::GMMA_64x8x16_F32TF32TF32_RS_TN<SC, S0>>("f32.tf32.tf32.RS");
  trait<SP::GMMA_64x8x64_F32E4M3E4M3_SS_TN<SC, S0>>("f32.e4m3.e4m3.SS");
  trait<SP::GMMA_64x8x64_F16E5M2E4M3_RS_TN<SC, S0>>("f16.e5m2.e4m3.RS");
  trait<SP::GMMA_64x8x64_F32E5M2E5M2_SS_TN<SC, S0>>("f32.e5m2.e5m2.SS");
  trait<SP::GMMA_64x8x64_S32S8S8_SS_TN<S0>>("s32.s8.s8.SS");
  trait<SP::GMMA_64x8x64_S32U8S8_RS_TN<S0>>("s32.u8.s8.RS");
  trait<SP::GMMA_64x8x64_S32S8U8_SS_TN<S0>>("s32.s8.u8.SS");
  trait<SP::GMMA_64x8x64_S32U8U8_RS_TN<S0>>("s32.u8.u8.RS");
  out.pop_back();
  out += "},\"a_rs\":{";
  a_rs<SP::GMMA_64x8x32_F32F16F16_RS<MAJ, SC, S0>>("f16");
  a_rs<SP::GMMA_64x8x32_F32BF16BF16_RS<MAJ, SC, S0>>("bf16");
  a_rs<SP::GMMA_64x8x16_F32TF32TF32_RS_TN<SC, S0>>("tf32");
  a_rs<SP::GMMA_64x8x64_F32E4M3E5M2_RS_TN<SC, S0>>("e4m3");
  a_rs<SP::GMMA_64x8x64_F16E5M2E4M3_RS_TN<SC, S0>>("e5m2");
  a_rs<SP::GMMA_64x8x64_S32S8U8_RS_TN<S0>>("s8");
  a_rs<SP::GMMA_64x8x64_S32U8S8_RS_TN<S0>>("u8");
  out.pop_back();
  out += "}}";
  std::puts(out.c_str());
  return 0;
}
