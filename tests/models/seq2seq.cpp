// The model suite's seq2seq greedy decoder (model_functions.h).
#include "model_functions.h"

namespace models {
using namespace graph;

Seq2SeqImpl::Seq2SeqImpl(int64_t vocab, int64_t embed, int64_t hidden)
    : hidden(hidden),
      src_emb(register_module("src_emb", nn::Embedding(vocab, embed))),
      tgt_emb(register_module("tgt_emb", nn::Embedding(vocab, embed))),
      enc(register_module("enc", nn::GRUCell(embed, hidden))),
      dec(register_module("dec", nn::GRUCell(embed, hidden))),
      out(register_module("out", nn::Linear(hidden, vocab))) {}

[[graph::static]] std::tuple<Tensor, Tensor, Tensor> Seq2SeqImpl::forward(const Tensor& src, int64_t bos, int64_t eos,
                                                                          int64_t max_len) {
  // Encoder: a GRU cell over the source tokens.
  Tensor x = src_emb(src);  // [S, E]
  Tensor h = zeros({1, hidden});
  for (int64_t t = 0; t < src.size(0); ++t) h = enc(x.slice(0, t, t + 1), h);
  // Decoder: feed back the argmax until it is eos, or max_len tokens were made.
  // The loss is the negative log-likelihood of the tokens it chose.
  Tensor tok = full({1}, bos, kInt64);
  Tensor nll = zeros({1});
  int64_t next = bos;
  int64_t steps = 0;
  while (next != eos && steps < max_len) {
    h = dec(tgt_emb(tok), h);
    Tensor logp = log_softmax(out(h), 1);  // [1, V]
    tok = logp.argmax(1);                  // [1], int64
    nll = nll - logp.gather(1, tok.view({1, 1})).view({1});
    next = tok.item<int64_t>();
    ++steps;
  }
  return {h, full({1}, static_cast<double>(steps)), nll.sum()};
}

}  // namespace models
