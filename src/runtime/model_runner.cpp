#include "runtime/model_runner.h"

#include "core/error.h"

namespace portllm {

bool has_recurrent_layers(const std::vector<LayerCacheSpec>& spec) {
  for (const auto& s : spec)
    if (s.kind == LayerCacheSpec::Kind::Recurrent) return true;
  return false;
}

ModelRunner::ModelRunner(Model& model, OpContext& ctx, const KvCacheConfig& kv)
    : model_(model), ctx_(ctx), cache_(std::make_unique<KvCache>(ctx, model.cache_spec(), kv)) {}

std::vector<SeqWork> ModelRunner::make_work(const SchedulerOutput& out) const {
  std::vector<SeqWork> work;
  work.reserve(out.scheduled.size());
  const bool state = cache_->has_state_layers();
  for (const ScheduledRequest& s : out.scheduled) {
    SeqWork w;
    w.tokens = s.token_ids;
    w.start_pos = s.start_position;
    w.block_table = s.block_table;
    w.state_slot = state ? s.state_slot : -1;
    PL_CHECK(!state || s.state_slot >= 0, "request {}: the model keeps recurrent state but the request has no state slot", s.id);
    w.logits = s.sample ? SeqWork::Logits::Last : SeqWork::Logits::None;
    work.push_back(std::move(w));
  }
  return work;
}

void ModelRunner::enable_decode_graphs(std::vector<int> sizes, int64_t max_model_len) {
  auto g = std::make_unique<DecodeGraphs>(model_, ctx_, *cache_, std::move(sizes), max_model_len);
  g->capture();
  graphs_ = std::move(g);
}

void ModelRunner::reset_state_slot(int slot) {
  for (auto& layer : cache_->layers())
    for (auto& st : layer.state) {
      Tensor row = st.select(0, slot);
      ctx_.device->memset(row.data, 0, row.nbytes(), ctx_.stream);
    }
}

Tensor ModelRunner::execute(const SchedulerOutput& out, const DeviceTokenFeed* feed) {
  if (out.scheduled.empty()) return {};
  if (cache_->has_state_layers())
    for (const ScheduledRequest& s : out.scheduled)
      if (s.start_position == 0 && s.state_slot >= 0) reset_state_slot(s.state_slot);
  const std::vector<SeqWork> work = make_work(out);
  if (feed) {
    PL_CHECK(feed->src_rows.size() == work.size(), "token feed: {} rows for a step of {} requests", feed->src_rows.size(),
             work.size());
    for (const SeqWork& w : work) PL_CHECK(w.tokens.size() == 1, "token feed: only for steps that feed one token per request");
  }
  if (graphs_ && graphs_->covers(work)) return graphs_->run(work, feed);
  ForwardBatch batch = build_forward_batch(ctx_, work, cache_->config().page_size);
  // One token per request: build_forward_batch keeps the requests' order, so row i is token i.
  if (feed) apply_token_feed(ctx_, batch.token_ids, *feed);
  const int64_t L = batch.num_logits(), V = model_.config().vocab_size;
  Tensor logits;
  if (L > 0) logits = ctx_.device->empty(DType::F32, {L, V});
  model_.forward(ctx_, batch, cache_->layers(), logits);
  if (L == 0) return {};
  return logits;  // on the device: the engine samples there (engine/batch_sampler.h)
}

}  // namespace portllm
