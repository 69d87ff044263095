"""ADBench LSTM (ADBENCH.md §4), written from the problem definition.  The
time steps are a Python loop for NumPy, PyTorch and autograd and a
``lax.scan`` for JAX (unrolling 1023 steps would make jit compile for
minutes); the layer step is shared.  Arguments: (main, extra, state, sequence);
the gradient is with respect to (main, extra).  NumPy has no hand gradient."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from labrys.adbench import read_lstm
from labrys.bench.suite import Instance, LabrysProgram, Unavailable, Workload

from .frameworks import peers

PROGRAM = Path(str(resources.files("labrys.adbench").joinpath("lstm.ks")))
CHARACTERS = {"quick": 9, "probe": 3}  # smaller sizes keep the first characters of the sequence


def sigmoid(xp, z):
    return 1.0 / (1.0 + xp.exp(-z))


def layer(xp, weight, bias, hidden, cell, x):
    """One layer step (§4.2): gates [forget | input | output | candidate]; returns (h', s')."""
    b = hidden.shape[0]
    forget = sigmoid(xp, x * weight[:b] + bias[:b])
    ingate = sigmoid(xp, hidden * weight[b:2 * b] + bias[b:2 * b])
    outgate = sigmoid(xp, x * weight[2 * b:3 * b] + bias[2 * b:3 * b])
    change = xp.tanh(hidden * weight[3 * b:] + bias[3 * b:])
    cell = cell * forget + ingate * change
    return outgate * xp.tanh(cell), cell


def time_step(xp, main, extra, states, char, target):
    """All layers at one time step (§4.3): the new states and this step's gain."""
    x = char * extra[0]
    new = []
    for i, (h, s) in enumerate(states):
        h, s = layer(xp, main[2 * i], main[2 * i + 1], h, s, x)
        new.append((h, s))
        x = h
    ypred = x * extra[1] + extra[2]
    lse = xp.log(2.0 + xp.sum(xp.exp(ypred)))  # "2 +": ADBench's definition, not a logsumexp
    return new, xp.sum(target * (ypred - lse))


def objective(xp, main, extra, state, sequence):
    states = [(state[2 * i], state[2 * i + 1]) for i in range(state.shape[0] // 2)]
    total = 0.0
    for t in range(sequence.shape[0] - 1):
        states, gain = time_step(xp, main, extra, states, sequence[t], sequence[t + 1])
        total = total + gain
    return -total / ((sequence.shape[0] - 1) * sequence.shape[1])


def jax_objective(jnp, main, extra, state, sequence):
    from jax import lax

    def step(states, chars):
        states, gain = time_step(jnp, main, extra, states, *chars)
        return states, gain
    states = [(state[2 * i], state[2 * i + 1]) for i in range(state.shape[0] // 2)]
    _, gains = lax.scan(step, states, (sequence[:-1], sequence[1:]))
    return -jnp.sum(gains) / ((sequence.shape[0] - 1) * sequence.shape[1])


def make(file: str):
    def instance(data: Path, size: str) -> Instance:
        path = data / "lstm" / file
        if not path.exists():
            raise Unavailable(f"no data file {path} (ADBench's data is the clone's data/adbench)")
        g = read_lstm(path)
        g.sequence = g.sequence[:CHARACTERS.get(size, len(g.sequence))]
        args = (g.main, g.extra, g.state, g.sequence)
        program = LabrysProgram(PROGRAM, "lstm_objective", g.arguments(), pick=lambda grad: grad[:2],
                                wrt=("main_params", "extra_params"))
        layers, (c, b) = g.main.shape[0] // 2, g.sequence.shape
        return Instance(f"l = {layers}, c = {c}, b = {b}", program,
                        peers(objective, args, (0, 1), jax_objective=jax_objective),
                        work=c - 1, work_unit="time steps")
    return instance


WORKLOADS = [Workload("lstm_l2_c1024", "ADBench LSTM, l = 2, c = 1024", make("lstm_l2_c1024.txt"), ("adbench", "lstm"))]
