// One step's sampling: the next token of every row of the step's logits [B, V], on the device
// that holds them. Rows are sampled by the SAMPLE op (ops/op_args_sample.h), so a GPU step
// uploads the rows' parameters and penalty lists once and downloads B int32 ids; rows that
// want logprobs take the host sampler (sample_token) on host copies of just their logits.
// On the CPU the logits are host memory and nothing is copied.
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "backend/ahead_upload.h"
#include "backend/host_staging.h"
#include "engine/sampler.h"
#include "ops/op_args_sample.h"
#include "ops/registry.h"

namespace portllm {

struct SampleRow {
  const SamplingParams* params = nullptr;
  SamplerState* state = nullptr;
  std::span<const int32_t> stop_ids;  // masked while state->num_output < params->min_tokens
};

// A step's sampling, launched and not yet read back (BatchSampler::launch).
struct PendingSample {
  std::vector<SampleRow> rows;
  Tensor logits;                     // kept alive until finish (host rows read it in place on the CPU)
  std::vector<int64_t> op_rows, host_rows;
  std::vector<float> host_copy;      // host rows' logits downloaded from a GPU
  std::vector<float*> host_ptr;      // row -> its logits on the host (host rows only)
  Tensor ids;                        // [B] i32 the op wrote, on the device (rows it skipped: -1)
  StagingBuffer ids_host;            // their download (GPU), valid once ids_host.done has passed
};

// Samples the rows of a step's logits, in two halves so that the next step can be launched
// between them (async scheduling): launch() queues the SAMPLE op and the download of its ids
// without waiting for the device; finish() waits and returns the tokens. Each row's SamplerState
// advances at launch (RNG counter, num_output: both known before the token is) and at finish
// (penalty counts, which need it), exactly as sample_token advances it, so a sequence of
// launch/finish pairs draws the same tokens whether or not another launch comes in between;
// a row whose next draw depends on its penalties must be finished before that draw is launched.
class BatchSampler {
 public:
  explicit BatchSampler(OpContext& ctx);
  // logits: [rows.size(), V] f32 on ctx's device, row i for rows[i]; adjusted in place.
  PendingSample launch(const Tensor& logits, std::span<const SampleRow> rows);
  // Rows whose state the caller has set to null since launch (a sequence gone meanwhile) are
  // skipped: their result is left default.
  std::vector<SampleResult> finish(PendingSample& p);
  std::vector<SampleResult> sample(const Tensor& logits, std::span<const SampleRow> rows) {
    PendingSample p = launch(logits, rows);
    return finish(p);
  }

 private:
  OpContext& ctx_;
  HostStaging params_;  // the op's parameters, uploaded
  HostStaging ids_;     // its ids, downloaded; three, as two steps may be in flight
  // Where the device has an upload stream: the parameters go up on it ahead of the main stream,
  // and the ids come down on the auxiliary stream after `sampled_`, so that neither copy sits on
  // the main stream between the op and the next step (backend/ahead_upload.h).
  AheadUpload ahead_;
  std::unique_ptr<Event> sampled_;
};

// The SAMPLE op's inputs for rows sampled there: the row's parameters and its adjustment
// entries (bias, min_tokens mask, repetition, presence/frequency), appended to `entries`.
SampleRowParams sample_row_params(const SampleRow& row);
void append_sample_adjustments(const SampleRow& row, std::vector<int32_t>& entries);

}  // namespace portllm
