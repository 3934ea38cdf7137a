// The environment rows and their reading (env.h).
#include "core/base/env.h"

#include <array>
#include <cstdlib>
#include <mutex>

#include "core/base/error.h"

namespace strata::core {
namespace {

using K = EnvKind;
using R = EnvRead;

constexpr EnvRow kRows[] = {
    {EnvVar::Log, "STRATA_LOG", "=0", "", K::OffWhenZero, R::Process,
     "silences the library's informational messages on stderr"},
    {EnvVar::DataDir, "STRATA_DATA_DIR", "", "", K::Text, R::Process,
     "where `make-model --vocab qwen3` finds `qwen3-tokenizer/tokenizer.json.gz`"},
    {EnvVar::PrefillTiming, "STRATA_PREFILL_TIMING", "=1", "", K::OnWhenOne, R::Process,
     "after every prompt, its per-phase times (attention, routing, grouping, stream wait, experts, combine, "
     "transfer), the bytes streamed and the achieved link rate, on stderr (also in `strata_stats`)"},
    {EnvVar::NoAvx2, "STRATA_NO_AVX2", "=1", "", K::OnWhenSet, R::Process,
     "the CPU's quantized dot products use the plain loops instead of their AVX2 forms (the same bits, slower)"},
    {EnvVar::SyncCheck, "STRATA_SYNC_CHECK", "=1", "", K::OnWhenOne, R::Process,
     "(CUDA) synchronize and check after every kernel launch"},
    {EnvVar::Gemm, "STRATA_GEMM", "=mma\\|wgmma", "mma|wgmma", K::Choice, R::Process,
     "(CUDA) the kernel of the quantized prompt GEMMs. Unset (the default): dense matrices at 16 positions or more are "
     "decoded once to F16 and multiplied by cuBLAS (`src/cuda/gemm/dense_gemm.h`), the rest run the warpgroup kernel "
     "(`src/cuda/gemm/mmq_wgmma.cuh`) on devices of compute capability 9.0 and `mma.sync` elsewhere. `wgmma` keeps the "
     "own kernels for every prompt GEMM (warpgroup where it runs); `mma` uses `mma.sync` (`src/cuda/gemm/mmq_f16.cuh`) "
     "on every device. All give the same F16 products summed in another order. Any other value fails the GEMM with an "
     "invalid-argument error"},
    {EnvVar::Attention, "STRATA_ATTENTION", "=mma\\|wgmma", "mma|wgmma", K::Choice, R::Process,
     "(CUDA) the kernel of prompt attention over F16 caches of head dim 128: `wgmma` (the default) uses the warpgroup "
     "kernel (`src/cuda/attention/attention_wgmma.cuh`) on devices of compute capability 9.0 and `mma.sync` elsewhere; "
     "`mma` uses `mma.sync` (`src/cuda/attention/attention_mma.cuh`) on every device. Same operands, products summed "
     "in another order; INT8 caches and other head dims always take `mma.sync`. Any other value fails the attention "
     "with an invalid-argument error"},
    {EnvVar::Pdl, "STRATA_PDL", "=0", "", K::OffWhenZero, R::Process,
     "(CUDA) launches decode steps' kernels (captured in the decode graph, or one by one when experts stream) as "
     "ordinary stream successors instead of programmatic dependents (`src/cuda/runtime/launch.h`: on compute "
     "capability 9.0 a kernel may then start while the one before it finishes, waiting for it in its first statement)"},
    {EnvVar::CudaGraph, "STRATA_CUDA_GRAPH", "=0", "", K::OffWhenZero, R::Session,
     "(CUDA) runs single-token steps launch by launch instead of replaying the step's captured CUDA graph (graphs "
     "are also off with `STRATA_SYNC_CHECK=1` and on stages that stream experts)"},
    {EnvVar::PeerPieces, "STRATA_PF_PEER_PIECES", "=0\\|1\\|K", "", K::Number, R::Session, "overrides `peer_pieces`"},
    {EnvVar::PrefillHelp, "STRATA_PREFILL_HELP", "=0", "", K::Number, R::Session,
     "turns the stage helper off (`no_helper`)"},
    {EnvVar::PrefillHelpFrac, "STRATA_PREFILL_HELP_FRAC", "=f", "", K::Number, R::Session,
     "fixes the helper's share (`helper_share`)"},
    {EnvVar::TestSeed, "STRATA_TEST_SEED", "=n", "", K::Text, R::Tests, "replays a test's random inputs"},
};

constexpr size_t kCount = std::size(kRows);

constexpr bool rows_in_order() {
  for (size_t i = 0; i < kCount; ++i)
    if (static_cast<size_t>(kRows[i].var) != i) return false;
  return true;
}
static_assert(rows_in_order(), "one row per EnvVar, in the enum's order");

}  // namespace

std::span<const EnvRow> env_rows() { return kRows; }

const EnvRow& env_row(EnvVar v) { return kRows[static_cast<size_t>(v)]; }

const char* env_value(EnvVar v) {
  const EnvRow& row = env_row(v);
  if (row.read != EnvRead::Process) return std::getenv(row.name);
  static std::array<std::once_flag, kCount> once;
  static std::array<std::optional<std::string>, kCount> value;
  const auto i = static_cast<size_t>(v);
  std::call_once(once[i], [&] {
    if (const char* now = std::getenv(row.name)) value[i] = now;
  });
  return value[i] ? value[i]->c_str() : nullptr;
}

bool env_flag(EnvVar v) { return env_flag_of(env_row(v), env_value(v)); }

std::optional<std::string_view> env_choice(EnvVar v) { return env_choice_of(env_row(v), env_value(v)); }

std::optional<double> env_number(EnvVar v) { return env_number_of(env_row(v), env_value(v)); }

bool env_flag_of(const EnvRow& row, const char* value) {
  switch (row.kind) {
    case EnvKind::OffWhenZero: return !(value != nullptr && std::string_view(value) == "0");
    case EnvKind::OnWhenOne: return value != nullptr && std::string_view(value) == "1";
    case EnvKind::OnWhenSet: return value != nullptr;
    default: fail(STRATA_ERR_INTERNAL, "{} is not a flag", row.name);
  }
}

std::optional<std::string_view> env_choice_of(const EnvRow& row, const char* value) {
  if (row.kind != EnvKind::Choice) fail(STRATA_ERR_INTERNAL, "{} is not a choice", row.name);
  if (value == nullptr) return std::nullopt;
  std::string_view words = row.choices;
  while (!words.empty()) {
    const size_t bar = words.find('|');
    if (words.substr(0, bar) == value) return std::string_view(value);
    words = bar == std::string_view::npos ? std::string_view() : words.substr(bar + 1);
  }
  fail(STRATA_ERR_INVALID_ARGUMENT, "{}={}: expected one of {} (or unset)", row.name, value, row.choices);
}

std::optional<double> env_number_of(const EnvRow& row, const char* value) {
  if (row.kind != EnvKind::Number) fail(STRATA_ERR_INTERNAL, "{} is not a number", row.name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(value, &end);
  if (*end != '\0') fail(STRATA_ERR_INVALID_ARGUMENT, "{}={}: not a number", row.name, value);
  return x;
}

std::string env_markdown() {
  std::string md;
  for (const EnvRow& row : kRows) {
    const char* read = row.read == EnvRead::Process   ? "once per process"
                       : row.read == EnvRead::Session ? "when a session is created"
                                                      : "by the tests";
    md += fmt::format("| `{}{}` | {} | {} |\n", row.name, row.shape, row.effect, read);
  }
  return md;
}

}  // namespace strata::core
