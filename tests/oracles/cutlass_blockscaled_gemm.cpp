// Host program: CUTLASS's host reference GEMM mainloop (cutlass/util/reference/host/gett.hpp, gett_mainloop with
// GettBlockScalingMainloopParams) over block-scaled problems, with the scale factors held in CUTLASS's own
// scale-factor layout (Sm1xxBlockScaledConfig<SFVec>::tile_atom_to_shape_SFA / _SFB, sm100_blockscaled_layout.hpp).
//
// Input file (argv[1]), whitespace separated, one problem after another:
//   combo SFVec M N K   then A's M*K values, B's N*K values (row-major, [m][k] / [n][k], K the logical K: a sparse
//   MMA's A decompressed), then SFA's M*(K/SFVec) codes and SFB's N*(K/SFVec) codes (row-major, [mn][block]).
// combo: 0 e4m3 x e4m3 ue8m0, 1 e5m2 x e2m1 ue8m0, 2 e2m3 x e3m2 ue8m0, 3 e2m1 x e2m1 ue8m0 (SFVec 32 or 64),
//        4 e2m1 x e2m1 ue4m3 (SFVec 16 or 32). A sparse MMA's factor spans twice its dense one's logical elements
//        (CUTLASS's SM100_MMA_MXF4NVF4_SS_SPARSE: VS = 32 issues .block16, VS = 64 .kind::mxf4 .block32).
// Output: one JSON list of D matrices (row-major lists of M*N floats), computed by CUTLASS's reference in float.
// M, N are padded to 128 and K to 4 SF blocks with zero elements (scale factor 1), as CUTLASS's SF atom needs.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cute/tensor.hpp>
#include <cutlass/numeric_types.h>
#include <cutlass/float_subbyte.h>
#include <cutlass/detail/sm100_blockscaled_layout.hpp>
#include <cutlass/util/reference/host/gett.hpp>

using namespace cute;

template <class TA, class TB, class TSF, int VS>
void problem(FILE* in, bool first) {
  int M, N, K;
  if (fscanf(in, "%d %d %d", &M, &N, &K) != 3) { fprintf(stderr, "bad header\n"); exit(2); }
  const int Mp = (M + 127) / 128 * 128, Np = (N + 127) / 128 * 128, Kp = (K + 4 * VS - 1) / (4 * VS) * (4 * VS);
  std::vector<TA> a(size_t(Mp) * Kp, TA(0.f));
  std::vector<TB> b(size_t(Np) * Kp, TB(0.f));
  for (int m = 0; m < M; ++m) for (int k = 0; k < K; ++k) { float v; fscanf(in, "%f", &v); a[size_t(m) * Kp + k] = TA(v); }
  for (int n = 0; n < N; ++n) for (int k = 0; k < K; ++k) { float v; fscanf(in, "%f", &v); b[size_t(n) * Kp + k] = TB(v); }
  using Cfg = cutlass::detail::Sm1xxBlockScaledConfig<VS>;
  auto shape = make_shape(Mp, Np, Kp, 1);
  auto lsfa = Cfg::tile_atom_to_shape_SFA(shape);
  auto lsfb = Cfg::tile_atom_to_shape_SFB(shape);
  std::vector<TSF> sfa(cosize(lsfa)), sfb(cosize(lsfb));
  auto SfA = make_tensor(sfa.data(), lsfa);
  auto SfB = make_tensor(sfb.data(), lsfb);
  const TSF one = TSF(1.f);
  for (int m = 0; m < Mp; ++m) for (int k = 0; k < Kp; ++k) SfA(m, k, 0) = one;
  for (int n = 0; n < Np; ++n) for (int k = 0; k < Kp; ++k) SfB(n, k, 0) = one;
  // a code per (row, block): written at every k of the block (CUTLASS's layout maps them to one byte, stride 0)
  for (int m = 0; m < M; ++m) for (int blk = 0; blk < K / VS; ++blk) {
    unsigned c; fscanf(in, "%u", &c);
    for (int k = blk * VS; k < (blk + 1) * VS; ++k) SfA(m, k, 0) = TSF::bitcast(uint8_t(c));
  }
  for (int n = 0; n < N; ++n) for (int blk = 0; blk < K / VS; ++blk) {
    unsigned c; fscanf(in, "%u", &c);
    for (int k = blk * VS; k < (blk + 1) * VS; ++k) SfB(n, k, 0) = TSF::bitcast(uint8_t(c));
  }
  auto A = make_tensor(a.data(), make_layout(make_shape(Mp, Kp, 1), make_stride(Kp, 1, Mp * Kp)));
  auto B = make_tensor(b.data(), make_layout(make_shape(Np, Kp, 1), make_stride(Kp, 1, Np * Kp)));
  cutlass::reference::host::GettBlockScalingMainloopParams<float, decltype(A), decltype(SfA), decltype(B), decltype(SfB)>
      params{A, SfA, B, SfB};
  std::vector<float> d(size_t(Mp) * Np);
  for (int m0 = 0; m0 < Mp; m0 += 64) for (int n0 = 0; n0 < Np; n0 += 64) {
    float acc[64][64];
    cutlass::reference::host::gett_mainloop<decltype(params), float, 64, 64>(params, m0, n0, 0, acc);
    for (int i = 0; i < 64; ++i) for (int j = 0; j < 64; ++j) d[size_t(m0 + i) * Np + n0 + j] = acc[i][j];
  }
  printf("%s[", first ? "" : ",\n");
  for (int m = 0; m < M; ++m) for (int n = 0; n < N; ++n) printf("%s%.9g", (m | n) ? "," : "", d[size_t(m) * Np + n]);
  printf("]");
}

int main(int argc, char** argv) {
  FILE* in = fopen(argv[1], "r");
  if (!in) { fprintf(stderr, "cannot open %s\n", argv[1]); return 2; }
  printf("[");
  int combo, vs; bool first = true;
  while (fscanf(in, "%d %d", &combo, &vs) == 2) {
    using namespace cutlass;
    const int key = combo * 100 + vs;
    switch (key) {
      case 32: problem<float_e4m3_t, float_e4m3_t, float_ue8m0_t, 32>(in, first); break;
      case 64: problem<float_e4m3_t, float_e4m3_t, float_ue8m0_t, 64>(in, first); break;
      case 132: problem<float_e5m2_t, float_e2m1_t, float_ue8m0_t, 32>(in, first); break;
      case 164: problem<float_e5m2_t, float_e2m1_t, float_ue8m0_t, 64>(in, first); break;
      case 232: problem<float_e2m3_t, float_e3m2_t, float_ue8m0_t, 32>(in, first); break;
      case 264: problem<float_e2m3_t, float_e3m2_t, float_ue8m0_t, 64>(in, first); break;
      case 332: problem<float_e2m1_t, float_e2m1_t, float_ue8m0_t, 32>(in, first); break;
      case 364: problem<float_e2m1_t, float_e2m1_t, float_ue8m0_t, 64>(in, first); break;
      case 416: problem<float_e2m1_t, float_e2m1_t, float_ue4m3_t, 16>(in, first); break;
      case 432: problem<float_e2m1_t, float_e2m1_t, float_ue4m3_t, 32>(in, first); break;
      default: fprintf(stderr, "unknown combo %d with SFVec %d\n", combo, vs); return 2;
    }
    first = false;
  }
  printf("]\n");
  return 0;
}
