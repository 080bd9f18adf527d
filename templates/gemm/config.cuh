// templates/gemm/config.cuh: fixed geometry derived from the hooks, and checks
// that the hooks describe a kernel the template can run.
#pragma once

static_assert(kTileM == gemm_layout::kTile && kTileN == gemm_layout::kTile && kThreads == gemm_layout::kThreads,
              "the GEMM template is written for 64x64 tiles and 256 threads (gemm/geometry.h)");
static_assert(kTileK == 8 || kTileK == 16 || kTileK == 32, "kTileK must be 8, 16 or 32");
static_assert(kInnerProduct >= 1 && kInnerProduct <= 3, "kInnerProduct is 1 (3xTF32), 2 (TF32) or 3 (FP16x3)");
// Strict precision: 3xTF32 or FP16x3 (which falls back to 3xTF32).
constexpr bool kStrict = kInnerProduct != 2;
static_assert((kBlockM == 64 || kBlockM == 128) && (kBlockN == 64 || kBlockN == 128 || kBlockN == 256),
              "blocks are 64 or 128 rows and 64, 128 or 256 columns");
static_assert(kBlockN != 256 || (kInnerProduct == 2 && kBlockM == 128),
              "256-column blocks are for TF32 on wgmma (128 accumulators per thread)");
static_assert(kNormGroup >= 0 && kNormGroup <= kTileN && (kNormGroup == 0 || kTileN % kNormGroup == 0),
              "a norm group must divide the tile width");
static_assert(kStatsGroup >= 0 && kStatsGroup <= kTileN && (kStatsGroup == 0 || kTileN % kStatsGroup == 0),
              "a statistics group must divide the tile width");
static_assert(kRowReduce >= 0 && kRowReduce <= 2, "kRowReduce is 0 (none), 1 (min) or 2 (max)");
static_assert(kRowReduce == 0 || kNormGroup > 0, "the row reduction runs after a fused row norm");
static_assert(kNormGroup == 0 || kStatsGroup == 0, "a tile computes statistics or a row norm, not both");
static_assert(!kStatsFinalize || (kStatsGroup == 1 && kSplitK == 1 && kBlockBegin == 0 && kBlockEnd == 0),
              "statistics finalized in the kernel: per column, every output block finished by one block of one launch");

// One block per SM leaves room for a 128-row block's accumulators and split
// fragments. Element-wise (gathering) operand loads run 64x64 blocks with 8-deep slices,
// three per SM (80 registers, no spills), for more warps to hide their
// latency (chain 85's conv ran at 12.5% occupancy with one).
constexpr bool kGathers = !(kAVector && kBVector);
constexpr int kMinBlocksPerSM = kGathers && kBlockM == 64 && kBlockN == 64 && kTileK == 8 ? 3 : 1;

// Shared memory (gemm/geometry.h): register-staged, two k slices of A
// ([kTileK][kBlockM]) and B ([kTileK][kBlockN]), rows padded. The epilogue
// reuses it for the tile ([kTileM][kTileN + 1]) and scratch.
constexpr int kAStride = kBlockM + gemm_layout::kStagedPad;
constexpr int kBStride = kBlockN + gemm_layout::kStagedPad;
constexpr int kSliceFloats = gemm_layout::staged_slice_floats(kBlockM, kBlockN, kTileK);
constexpr int kTileStride = gemm_layout::tile_stride(kTileN);
constexpr int kParts = kThreads / kTileN;        // 4 row parts (statistics) / column parts (norm)
constexpr int kPartRows = kTileM / kParts;       // 16 rows per statistics part
constexpr int kPartCols = kTileN / kParts;       // 16 columns per norm part
constexpr int kScratchOffset = kTileM * kTileStride;
constexpr int kEpilogueFloats = gemm_layout::epilogue_floats(kTileM, kTileN, kThreads);
// kColumnNorm stages the block's tiles one below the other (every row of its
// columns).
constexpr int kColumnNormFloats = gemm_layout::column_norm_floats(kBlockM, kTileN);
static_assert(!kColumnNorm || (kBlockN == kTileN && !kEpilogueAlongM && kNormGroup == 0 &&
                               kStatsGroup == 0 && kRowReduce == 0 && kDynamicSharedFloats >= kColumnNormFloats),
              "a column norm takes tensor-core blocks one tile wide and their staging room, alone");
constexpr int kSharedFloats = gemm_layout::max_of(2 * kSliceFloats, kEpilogueFloats);
// In dynamic shared memory: the launch gives kDynamicSharedFloats.
static_assert(kDynamicSharedFloats >= kSharedFloats, "the launch must give the block its shared memory");
static_assert(kThreads == kParts * kTileN && kThreads == kParts * kTileM, "epilogue thread mapping");

// Global loads of one k slice: kALoads / kBLoads vectors of kAWidth /
// kBWidth elements per thread (16-byte loads where the operand allows).
constexpr int kAWidth = kAVector ? 4 : 1;
constexpr int kBWidth = kBVector ? 4 : 1;
constexpr int kALoads = kBlockM * kTileK / (kThreads * kAWidth);
constexpr int kBLoads = kBlockN * kTileK / (kThreads * kBWidth);
static_assert(kALoads * kThreads * kAWidth == kBlockM * kTileK && kBLoads * kThreads * kBWidth == kBlockN * kTileK,
              "slice loads must divide evenly among the threads");

// Tensor-core warp layout: kWarpsM x kWarpsN warps, each a kWarpM x kWarpN
// warp tile of kFragsM x kFragsN m16n8 accumulator fragments. A warp tile
// lies inside one epilogue tile.
// The cp.async path (tensor cores, both operands 16-byte vectors along k, as
// in linear): kStages slices in flight, copied without passing through
// registers, stored row-major (As[m][k], Bs[n][k]).
constexpr bool kAsync = kAVector && kBVector && kLoadAAlongK && kLoadBAlongK;
// On sm_90a the cp.async path multiplies with warpgroup MMA (wgmma), both
// operands read from shared memory by the tensor cores: no fragment loads or
// per-warp operand splits. Elsewhere (sm_80, sm_90 without the a-features)
// it uses mma.sync.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr bool kHaveWgmma = true;
#else
constexpr bool kHaveWgmma = false;
#endif
constexpr bool kWgmma = kAsync && kHaveWgmma && kBlockM == 128 && kTileK == 32;
// FP16x3 runs on wgmma (gemm/mainloop_fp16x3.cuh), with B split into fp16
// halves by the pass before the kernel (kBSplit) or in shared memory. Where
// the same source compiles without wgmma (mma.sync), kInnerProduct 3
// multiplies with 3xTF32 from the fp32 B.
constexpr bool kFp16x3 = kInnerProduct == 3 && kWgmma;

constexpr int kWarps = kThreads / 32;
// wgmma: warpgroup w / 4 owns rows 64 * (w / 4) and up; warp w owns 16 of
// them across the whole block width (the m64nN accumulator layout).
constexpr int kWarpsN = kWgmma ? 1 : kBlockN >= 128 ? 4 : 2;
constexpr int kWarpsM = kWarps / kWarpsN;
constexpr int kWarpM = kBlockM / kWarpsM;
constexpr int kWarpN = kBlockN / kWarpsN;
constexpr int kFragsM = kWarpM / 16;
constexpr int kFragsN = kWarpN / 8;
static_assert(kWarpsM * kWarpM == kBlockM && kWarpsN * kWarpN == kBlockN && kFragsM >= 1 && kFragsN >= 1 &&
                  kTileM % kWarpM == 0 && kTileN % 8 == 0,
              "tensor-core warp tiles must cover the block");

// Slice rows on the cp.async path (gemm/geometry.h): mma.sync pads them to
// kTileK + 4 floats; wgmma takes 32-float (128-byte) rows in the 128-byte
// swizzle, whose 16-byte chunk c of row r sits at chunk c ^ (r % 8) of that
// row.
constexpr int kRowStride = gemm_layout::async_row_stride(kWgmma, kTileK);
// With B split before the kernel (kBSplit), each stage also holds B's small
// parts, copied like B.
constexpr bool kCopySmallB = gemm_layout::copies_small_b(kWgmma, kInnerProduct, kBSplit);
constexpr int kAsyncSliceFloats =
    gemm_layout::async_slice_floats(kWgmma, kInnerProduct, kBSplit, kBlockM, kBlockN, kTileK);
// The ring of kStages slices; wgmma with 3xTF32 splitting B here also holds
// two slices' small parts of B (same layout; A is split in registers) and 1
// KB of slack to align the slices to the swizzle's 1024 bytes.
constexpr int kAsyncFloats = gemm_layout::max_of(
    gemm_layout::async_floats(kWgmma, kInnerProduct, kBSplit, kBlockM, kBlockN, kTileK, kStages), kEpilogueFloats);
static_assert(!kAsync || (kStages >= 2 && kDynamicSharedFloats >= kAsyncFloats),
              "the launch must give the cp.async pipeline its shared memory");
