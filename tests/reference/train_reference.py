#!/usr/bin/python3
"""PyTorch reference for the training comparison in tests/nn_test.cpp and
examples/train.

Run by hand (PyTorch 1.13, CPU):   /usr/bin/python3 tests/reference/train_reference.py

It builds three models with PyTorch's default initialization from a fixed
seed, writes their initial parameters and the (deterministic, synthetic)
training data in cxxgraph's tensor file format (graph::nn::save / load, see
runtime/include/graph/nn.h), trains each for STEPS full-batch steps and writes
the loss before every step to train_losses.txt. Our code loads the same
files, trains the same way and must reproduce the curve.

  mlp : Sequential(Linear(2,32), Tanh, Linear(32,32), ReLU, Linear(32,2)),
        cross_entropy on 64 points inside/outside a circle;
        SGD(lr=0.1, momentum=0.9, weight_decay=1e-3, nesterov=True)
  cnn : Sequential(Conv2d(1,4,3,padding=1), ReLU, MaxPool2d(2), Flatten,
        Linear(64,3)), cross_entropy on 24 8x8 images whose class is the
        brightest of three horizontal bands; Adam(lr=0.01, weight_decay=1e-4)
  seq : Embedding(10,8) -> MultiheadAttention(8,2, batch_first) -> LayerNorm(8)
        -> LSTMCell(8,8) over the 5 positions -> Linear(8,1), mse_loss
        against a function of the token ids; Adam(lr=0.01, amsgrad=True)
        then SGD(lr=0.05, momentum=0.5, dampening=0.1) for the second half
Files written next to this script: mlp_init.bin, cnn_init.bin, seq_init.bin,
train_data.bin, train_losses.txt.
"""
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 30
HERE = os.path.dirname(os.path.abspath(__file__))

MAGIC = b"CXGRAPH\0"
VERSION = 1
DTYPE_CODES = {torch.float32: 0, torch.float64: 1, torch.float16: 2, torch.bfloat16: 3,
               torch.int32: 4, torch.int64: 5, torch.bool: 6}


def save_tensors(named, path):
    """graph::nn::save_tensors: magic, u32 version, u64 count, then per tensor
    u32 name length, name, u8 dtype, u32 rank, i64 sizes, u64 nbytes, data;
    little-endian throughout."""
    out = bytearray(MAGIC)
    out += struct.pack("<IQ", VERSION, len(named))
    for name, t in named:
        t = t.detach().contiguous()
        raw = t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        nb = name.encode()
        out += struct.pack("<I", len(nb)) + nb
        out += struct.pack("<BI", DTYPE_CODES[t.dtype], t.dim())
        out += struct.pack("<%dq" % t.dim(), *t.shape)
        out += struct.pack("<Q", len(raw)) + raw
    with open(path, "wb") as f:
        f.write(bytes(out))


def make_mlp():
    return nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))


def make_cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(64, 3))


class Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.norm = nn.LayerNorm(8)
        self.cell = nn.LSTMCell(8, 8)
        self.head = nn.Linear(8, 1)

    def forward(self, tokens):
        x = self.embed(tokens)                       # [N, L, 8]
        x = self.norm(x + self.attn(x, x, x, need_weights=False)[0])
        h = torch.zeros(x.shape[0], 8)
        c = torch.zeros(x.shape[0], 8)
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
        return self.head(h).squeeze(1)               # [N]


def data():
    g = torch.Generator().manual_seed(1234)
    mlp_x = torch.rand(64, 2, generator=g) * 4 - 2
    mlp_y = ((mlp_x ** 2).sum(1) < 1.6).long()
    cnn_x = torch.rand(24, 1, 8, 8, generator=g)
    cnn_y = torch.arange(24) % 3
    for i in range(24):  # brighten band cnn_y[i] (rows 0-2, 2-4 or 5-7)
        r = int(cnn_y[i]) * 5 // 2
        cnn_x[i, 0, r:r + 3] += 0.6
    seq_x = torch.randint(0, 10, (16, 5), generator=g)
    seq_y = torch.sin(seq_x.float().mul(0.7).sum(1) * 0.3)
    return {"mlp.x": mlp_x, "mlp.y": mlp_y, "cnn.x": cnn_x, "cnn.y": cnn_y, "seq.x": seq_x, "seq.y": seq_y}


def train(model, make_opt, x, y, loss_fn, switch=None):
    opt = make_opt(model.parameters())
    losses = []
    for step in range(STEPS):
        if switch is not None and step == STEPS // 2:
            opt = switch(model.parameters())
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        losses.append(loss.item())
        loss.backward()
        opt.step()
    return losses


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    d = data()
    save_tensors(list(d.items()), os.path.join(HERE, "train_data.bin"))
    mlp, cnn, seq = make_mlp(), make_cnn(), Seq()
    for name, m in (("mlp", mlp), ("cnn", cnn), ("seq", seq)):
        save_tensors(list(m.named_parameters()), os.path.join(HERE, name + "_init.bin"))

    curves = {
        "mlp": train(mlp, lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3, nesterov=True),
                     d["mlp.x"], d["mlp.y"], F.cross_entropy),
        "cnn": train(cnn, lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=1e-4),
                     d["cnn.x"], d["cnn.y"], F.cross_entropy),
        "seq": train(seq, lambda p: torch.optim.Adam(p, lr=0.01, amsgrad=True), d["seq.x"], d["seq.y"],
                     F.mse_loss,
                     switch=lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.5, dampening=0.1)),
    }
    with open(os.path.join(HERE, "train_losses.txt"), "w") as f:
        f.write("# PyTorch %s, written by train_reference.py: <model> <step> <loss before the step>\n"
                % torch.__version__)
        for name, losses in curves.items():
            for step, loss in enumerate(losses):
                f.write("%s %d %.9g\n" % (name, step, loss))
    for name, losses in curves.items():
        print("%s: %s" % (name, " ".join("%.5f" % l for l in losses)))


if __name__ == "__main__":
    main()
