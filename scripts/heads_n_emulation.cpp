// Host emulation of the decode attention's heads-as-N form (src/backends/gpu/attention_decode_heads_n.cuh):
// the warp's fragment layouts of mma.sync m16n8k16, ldmatrix(.trans) and movmatrix as the PTX ISA
// documents them, driven by the kernel's index expressions (which key and head dim each lane's
// fragment slot holds, the e4m3 chunk swizzle, the byte permutes, the output store map), against
// a double-precision softmax. It checks the layout algebra of a form first written without a GPU;
// the conformance suite on a GPU (`ops test -b cuda -o ATTN_DECODE`, which passed with the form on
// the H200 in the forty-third session) is the check of the kernel itself. Values are exact in f32 here (no f16 / e4m3 rounding: an e4m3
// byte b stands for (b - 128) / 32), so a wrong slot shows as an error of order 1.
//   g++ -O2 -std=c++20 scripts/heads_n_emulation.cpp -o /tmp/heads_n && /tmp/heads_n
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {
constexpr int D = 128, LD = D + 8, kKeys = 16;
struct Pair {  // a 32-bit register of two 16-bit values: lo = the lower column / k index
  float lo, hi;
};
using Acc = float[32][4];  // an accumulator fragment per lane

// mma.sync.m16n8k16.row.col: A 16x16 (a0: row g, k 2t..2t+1; a1: row g+8; a2: k +8; a3: both),
// B 16x8 (b0: k 2t..2t+1, column g; b1: k +8), C 16x8 (c0, c1: row g, columns 2t, 2t+1; c2, c3: row g+8).
void mma(const Pair (&a)[32][4], const Pair (&b)[32][2], Acc& c) {
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    for (int j = 0; j < 4; ++j) {
      const int r = g + 8 * (j & 1), k = 2 * t + 8 * (j >> 1);
      A[r][k] = a[l][j].lo;
      A[r][k + 1] = a[l][j].hi;
    }
    for (int j = 0; j < 2; ++j) {
      B[2 * t + 8 * j][g] = b[l][j].lo;
      B[2 * t + 8 * j + 1][g] = b[l][j].hi;
    }
  }
  for (int l = 0; l < 32; ++l)
    for (int e = 0; e < 4; ++e) {
      const int r = l / 4 + 8 * (e >> 1), n = 2 * (l % 4) + (e & 1);
      for (int k = 0; k < 16; ++k) c[l][e] += A[r][k] * B[k][n];
    }
}
// movmatrix.m8n8.trans.b16: lane (g, t) holds row g, columns 2t, 2t+1, before and after.
void movmatrix(const Pair (&in)[32], Pair (&out)[32]) {
  float M[8][8];
  for (int l = 0; l < 32; ++l) M[l / 4][2 * (l % 4)] = in[l].lo, M[l / 4][2 * (l % 4) + 1] = in[l].hi;
  for (int l = 0; l < 32; ++l) out[l] = {M[2 * (l % 4)][l / 4], M[2 * (l % 4) + 1][l / 4]};
}
// ldmatrix.x4(.trans): lane 8j + r gives the element offset of row r of matrix j; register j of
// lane (g, t) is row g, columns 2t, 2t+1 of matrix j (transposed: rows 2t, 2t+1 of column g).
void ldmatrix(const std::vector<float>& smem, const int (&addr)[32], Pair (&out)[32][4], bool trans) {
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) {
      const int g = l / 4, t = l % 4;
      out[l][j] = trans ? Pair{smem[addr[8 * j + 2 * t] + g], smem[addr[8 * j + 2 * t + 1] + g]}
                        : Pair{smem[addr[8 * j + g] + 2 * t], smem[addr[8 * j + g] + 2 * t + 1]};
    }
}
float e4m3(uint32_t b) { return (int(b & 0xff) - 128) / 32.f; }
void widen(uint32_t w, Pair& lo, Pair& hi) { lo = {e4m3(w), e4m3(w >> 8)}, hi = {e4m3(w >> 16), e4m3(w >> 24)}; }
uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
  const uint64_t v = (uint64_t(y) << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= uint32_t((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
int fp8_chunk(int row, int c) { return c ^ (row & 1) ^ (((row >> 2) & 3) << 1); }  // as the kernel's
uint32_t word(const uint8_t* p, int c) {
  uint32_t w;
  std::memcpy(&w, p + 4 * c, 4);
  return w;
}

// One sequence of `keys` keys for `ng` heads through the form; returns the worst error of the
// normalized outputs against the reference.
double run(bool e4m3_tiles, int ng, int keys, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> U(-1, 1);
  const int tiles = (keys + kKeys - 1) / kKeys;
  std::vector<float> Q(8 * LD, 0.f), K(size_t(tiles) * kKeys * D), V(K.size());
  std::vector<uint8_t> K8(K.size()), V8(K.size());
  for (int h = 0; h < ng; ++h)
    for (int d = 0; d < D; ++d) Q[h * LD + d] = U(rng);
  for (size_t i = 0; i < K.size(); ++i) {
    K8[i] = uint8_t(rng()), V8[i] = uint8_t(rng());
    K[i] = e4m3_tiles ? e4m3(K8[i]) : 2 * U(rng);
    V[i] = e4m3_tiles ? e4m3(V8[i]) : U(rng);
  }
  // Q^T's B fragments (heads_n::q_fragments).
  Pair qb[32][D / 16][2];
  for (int l = 0; l < 32; ++l)
    for (int s = 0; s < D / 16; ++s) {
      const int g = l / 4, t = l % 4, q0 = g * LD + (e4m3_tiles ? (D / 4) * t + 4 * s : 16 * s + 2 * t);
      const int step = e4m3_tiles ? 2 : 8;
      qb[l][s][0] = {Q[q0], Q[q0 + 1]};
      qb[l][s][1] = {Q[q0 + step], Q[q0 + step + 1]};
    }
  float o[32][D / 16][4] = {}, m[32][2], lsum[32][2] = {};
  for (auto& x : m) x[0] = x[1] = -INFINITY;
  for (int j = 0; j < tiles; ++j) {
    const int kt = kKeys * j;
    // The staged tiles: 16-bit rows LD apart; e4m3 rows of D bytes with swizzled 16-byte chunks.
    std::vector<float> sK(kKeys * LD, 0.f), sV(kKeys * LD, 0.f);
    std::vector<uint8_t> tK(kKeys * D, 128), tV(kKeys * D, 128);
    for (int r = 0; r < kKeys && kt + r < keys; ++r)
      for (int d = 0; d < D; ++d) {
        const size_t src = size_t(kt + r) * D + d;
        sK[r * LD + d] = K[src], sV[r * LD + d] = V[src];
        const int dst = r * D + fp8_chunk(r, d / 16) * 16 + d % 16;
        tK[dst] = K8[src], tV[dst] = V8[src];
      }
    Acc sa[2] = {};
    for (int ks = 0; ks < D / 16; ++ks) {
      Pair a[32][4], b[32][2];
      if (e4m3_tiles) {
        for (int l = 0; l < 32; ++l) {
          const int g = l / 4, t = l % 4, pk = 4 * (g / 2) + g % 2;
          for (int nt = 0; nt < 2; ++nt) {  // load_k_words' rows pk, pk + 2
            const int r = pk + 2 * nt;
            widen(word(&tK[r * D + fp8_chunk(r, 2 * t + ks / 4) * 16], ks % 4), a[l][nt], a[l][nt + 2]);
          }
        }
      } else {
        int addr[32];
        for (int l = 0; l < 32; ++l) addr[l] = (l % 16) * LD + 16 * ks + (l / 16) * 8;
        ldmatrix(sK, addr, a, false);
      }
      for (int l = 0; l < 32; ++l) b[l][0] = qb[l][ks][0], b[l][1] = qb[l][ks][1];
      mma(a, b, sa[ks % 2]);
    }
    // Masking, the lazy column maximum, exponentials and sums (heads_n::tile), scale 1.
    float s[32][4];
    bool raise = false;
    for (int l = 0; l < 32; ++l) {
      const int g = l / 4, k0 = e4m3_tiles ? 4 * (g / 2) + g % 2 : g, kd = e4m3_tiles ? 2 : 8;
      for (int e = 0; e < 4; ++e)
        s[l][e] = kt + k0 + (e & 2 ? kd : 0) < keys ? sa[0][l][e] + sa[1][l][e] : -INFINITY;
      raise |= std::max(s[l][0], s[l][2]) > m[l][0] || std::max(s[l][1], s[l][3]) > m[l][1];
    }
    if (raise) {
      float mn[32][2];
      for (int l = 0; l < 32; ++l)
        for (int h = 0; h < 2; ++h) {
          float c = m[l][h];
          for (int x = l % 4; x < 32; x += 4) c = std::max(c, std::max(s[x][h], s[x][h + 2]));
          mn[l][h] = c;
        }
      for (int l = 0; l < 32; ++l)
        for (int h = 0; h < 2; ++h) {
          const float alpha = std::exp2(m[l][h] - mn[l][h]);
          lsum[l][h] *= alpha;
          for (int i = 0; i < D / 16; ++i) o[l][i][h] *= alpha, o[l][i][h + 2] *= alpha;
          m[l][h] = mn[l][h];
        }
    }
    Pair p0[32], p1[32], pb0[32], pb1[32];
    for (int l = 0; l < 32; ++l) {
      for (int e = 0; e < 4; ++e) s[l][e] = std::exp2(s[l][e] - m[l][e & 1]);
      lsum[l][0] += s[l][0] + s[l][2], lsum[l][1] += s[l][1] + s[l][3];
      p0[l] = {s[l][0], s[l][1]}, p1[l] = {s[l][2], s[l][3]};
    }
    movmatrix(p0, pb0);
    movmatrix(p1, pb1);
    for (int i = 0; i < D / 16; ++i) {
      Pair a[32][4], b[32][2];
      if (e4m3_tiles) {
        const int c = i / 2, sel = i % 2 ? 0x7362 : 0x5140;
        for (int l = 0; l < 32; ++l) {
          const int g = l / 4, t = l % 4;
          uint32_t r[4];  // load_v_words' rows 4t .. 4t + 3, chunk g
          for (int k = 0; k < 4; ++k) r[k] = word(&tV[(4 * t + k) * D + fp8_chunk(4 * t + k, g) * 16], c);
          widen(byte_perm(r[0], r[1], sel), a[l][0], a[l][1]);
          widen(byte_perm(r[2], r[3], sel), a[l][2], a[l][3]);
        }
      } else {
        int addr[32];
        for (int l = 0; l < 32; ++l) addr[l] = (l % 8 + (l / 16) * 8) * LD + 16 * i + ((l / 8) % 2) * 8;
        ldmatrix(sV, addr, a, true);
      }
      for (int l = 0; l < 32; ++l) b[l][0] = pb0[l], b[l][1] = pb1[l];
      Acc acc;
      for (int l = 0; l < 32; ++l) std::memcpy(acc[l], o[l][i], sizeof(acc[l]));
      mma(a, b, acc);
      for (int l = 0; l < 32; ++l) std::memcpy(o[l][i], acc[l], sizeof(acc[l]));
    }
  }
  // Column sums and the output store map (heads_n::store_outputs).
  std::vector<double> out(8 * D), L(8, 0.0);
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    for (int h = 0; h < 2; ++h) L[2 * t + h] += lsum[l][h];
    for (int i = 0; i < D / 16; ++i)
      for (int e = 0; e < 4; ++e) {
        const int d = e4m3_tiles ? 16 * g + 2 * i + (e >> 1) : 16 * i + g + 8 * (e >> 1);
        out[(2 * t + (e & 1)) * D + d] = o[l][i][e];
      }
  }
  double worst = 0;
  for (int h = 0; h < ng; ++h) {
    std::vector<double> w(static_cast<size_t>(keys));
    double mx = -INFINITY, sum = 0;
    for (int k = 0; k < keys; ++k) {
      double x = 0;
      for (int d = 0; d < D; ++d) x += double(Q[h * LD + d]) * K[size_t(k) * D + d];
      w[size_t(k)] = x, mx = std::max(mx, x);
    }
    for (double& x : w) sum += (x = std::exp2(x - mx));
    for (int d = 0; d < D; ++d) {
      double r = 0;
      for (int k = 0; k < keys; ++k) r += w[size_t(k)] * V[size_t(k) * D + d];
      worst = std::max(worst, std::fabs(r / sum - out[h * D + d] / L[h]));
    }
  }
  return worst;
}
}  // namespace

int main() {
  struct Case {
    bool e4m3;
    int heads, keys;
  };
  const Case cases[] = {{true, 4, 139}, {true, 8, 139}, {true, 1, 1}, {false, 5, 109}, {false, 8, 109}, {false, 1, 1}};
  double worst = 0;
  for (const Case& c : cases) {
    const double e = run(c.e4m3, c.heads, c.keys, uint32_t(c.heads * 1000 + c.keys));
    std::printf("%-6s tiles, %d heads, %3d keys: worst error %.2e\n", c.e4m3 ? "e4m3" : "16-bit", c.heads, c.keys, e);
    worst = std::max(worst, e);
  }
  if (!(worst < 1e-4)) {
    std::printf("FAIL: the layouts do not compute attention\n");
    return 1;
  }
  std::printf("heads-as-N layouts: ok\n");
  return 0;
}
