"""A word-level LSTM language model trained on random tokens: the shape of pytorch/examples'
word_language_model (embedding → 2-layer LSTM → linear decoder, truncated backprop through time,
gradient clipping, SGD), with no profiler in it, for ``traceview run``.

    python benchmarks/lstm_lm/train.py [--batch 20] [--threads 2] [--steps 40]
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

VOCAB, EMBED, HIDDEN, LAYERS, BPTT = 10_000, 200, 200, 2, 35


class LanguageModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Embedding(VOCAB, EMBED)
        self.rnn = nn.LSTM(EMBED, HIDDEN, LAYERS, dropout=0.2)
        self.decoder = nn.Linear(HIDDEN, VOCAB)

    def forward(self, tokens: torch.Tensor, hidden: tuple[torch.Tensor, torch.Tensor]
                ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        output, hidden = self.rnn(self.encoder(tokens), hidden)
        return self.decoder(output).view(-1, VOCAB), hidden


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = LanguageModel()
    optimizer = torch.optim.SGD(model.parameters(), lr=20.0)
    criterion = nn.CrossEntropyLoss()
    data = torch.randint(0, VOCAB, (args.steps * BPTT + 1, args.batch))
    hidden = (torch.zeros(LAYERS, args.batch, HIDDEN), torch.zeros(LAYERS, args.batch, HIDDEN))
    for step in range(args.steps):
        tokens = data[step * BPTT:(step + 1) * BPTT]
        targets = data[step * BPTT + 1:(step + 1) * BPTT + 1].reshape(-1)
        hidden = tuple(h.detach() for h in hidden)
        optimizer.zero_grad()
        output, hidden = model(tokens, hidden)
        loss = criterion(output, targets)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
    print(f"loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
