"""Array arguments (issue 43, item 2): numpy arrays, torch tensors (with or
without grad, any dtype torch converts) and sequences go in; a tensor's
result comes back as a tensor on its device; bad input raises a short
TypeError that names the argument and never prints the data."""

import numpy as np
import pytest
import torch

import fedldp

D = 16
CALLS = 11  # len(calls())


def calls():
    """(name, f(x)) for every call that takes an array of D numbers."""
    vector = fedldp.VectorRandomizer("privunitg", D, 4.0, 1.0)
    value = fedldp.ValueMechanism("pm", 1.0)
    selector = fedldp.Selector("exp", 1.0, D, 4)
    ldpfl = fedldp.LdpFlRandomizer(1.0, [D], [(0.0, 1.0)])
    zeros = np.zeros(D, dtype=np.float32)
    return [
        ("x", lambda x: vector.randomize(x, rng=1)),
        ("x", lambda x: value.sample(x, rng=1)),
        ("r", lambda x: selector.select(x, rng=1)),
        ("r", lambda x: selector.probabilities(x)),
        ("weights", lambda x: ldpfl.randomize(x, rng=1)),
        ("weights", lambda x: fedldp.LdpFlRandomizer.layer_ranges(x, [D])),
        ("local", lambda x: fedldp.privatize_update(vector, x, zeros, rng=1)),
        ("global_model", lambda x: fedldp.privatize_update(vector, zeros, x, rng=1)),
        ("x", lambda x: value.mean(x)),
        ("y", lambda x: value.cdf(x, 0.25)),
        ("y", lambda x: value.can_output(x)),
    ]


def as_numpy(out):
    if isinstance(out, torch.Tensor):
        return out.numpy()
    if isinstance(out, fedldp.LdpFlReport):  # its values, +-(c + r) per weight
        return np.asarray(out.values())
    return np.asarray(out)


X = (np.arange(D) - 6) / 64  # exact in float64, float32 and bfloat16
SAME_INPUTS = [
    X.tolist(),
    tuple(X.tolist()),
    X.astype(np.float32),
    torch.tensor(X),
    torch.tensor(X, dtype=torch.float32).requires_grad_(),
    torch.tensor(X, dtype=torch.bfloat16).to(torch.float64),
]


@pytest.mark.parametrize("index", range(CALLS))
def test_every_array_form_gives_the_numpy_result(index):
    assert len(calls()) == CALLS
    name, call = calls()[index]
    want = as_numpy(call(X.astype(np.float32)))
    for x in SAME_INPUTS:
        got = as_numpy(call(x))
        assert np.array_equal(got, want), (name, type(x))


def test_a_tensor_comes_back_as_a_tensor_on_its_device():
    vector = fedldp.VectorRandomizer("privunitg", D, 4.0, 1.0)
    x = torch.tensor(X, dtype=torch.float32, requires_grad=True)
    out = vector.randomize(x, rng=2)
    assert isinstance(out, torch.Tensor) and out.device == x.device
    assert out.dtype == torch.float64  # a report is a point of a float64 grid
    vector.validate(out)
    picked = fedldp.Selector("exp", 1.0, D, 4).select(torch.tensor(np.stack([X, X])), rng=1)
    assert isinstance(picked, torch.Tensor) and picked.dtype == torch.int64
    assert isinstance(fedldp.ValueMechanism("pm", 1.0).sample(X, rng=1), np.ndarray)
    mean = fedldp.ValueMechanism("pm", 1.0).mean(x)
    assert isinstance(mean, torch.Tensor) and torch.allclose(mean, x.detach().double())
    assert isinstance(fedldp.ValueMechanism("pm", 1.0).mean(0.25), float)


BAD = [
    ("a string of digits 123456789", "str"),
    (None, "NoneType"),
    ({"a": 1}, "dict"),
    ([[1.0, 2.0], [3.0]], "list"),
    ([object()] * D, "dtype object"),
    (np.ones(D) * 1j, "dtype complex128"),
]


@pytest.mark.parametrize("index", range(CALLS))
@pytest.mark.parametrize("bad, said", BAD)
def test_bad_input_names_the_argument_not_the_data(index, bad, said):
    name, call = calls()[index]
    with pytest.raises(TypeError) as raised:
        call(bad)
    message = str(raised.value)
    assert message.startswith(name + " must "), message
    assert said in message and len(message) < 160, message
    assert "123456789" not in message


def test_runs_take_tensors_for_X_and_y():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    args = dict(clients=3, epochs=1, seed=2)
    from_numpy = fedldp.train_fedsel(X, y, "np", X_test=X, y_test=y, **args)
    from_torch = fedldp.train_fedsel(torch.from_numpy(X), torch.from_numpy(y), "np",
                                     X_test=torch.from_numpy(X), y_test=y.tolist(), **args)
    assert from_numpy["test_accuracy"] == from_torch["test_accuracy"]
    with pytest.raises(TypeError, match="^X must be an array of numbers"):
        fedldp.train_fedsel("not data", y, "np", **args)


def test_features_far_from_unit_scale_draw_a_warning_with_the_fix():
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, (200, 3)).astype(np.float32)
    y = (X[:, 0] > 0.5).astype(np.int64)
    quiet = fedldp.train_fedsel(X, y, "np", epochs=1, seed=1)
    assert quiet["warnings"] == []
    X[:, 2] *= 50000  # an income in dollars
    with pytest.warns(UserWarning, match=r"column 2 reaches \|x\| = 4\d{4}.*scale every column"):
        loud = fedldp.train_fedsel(X, y, "np", epochs=1, seed=1)
    assert len(loud["warnings"]) == 1 and "1 of 3 feature columns" in loud["warnings"][0]


def test_a_mistyped_argument_beside_an_array_never_prints_the_array():
    big = np.full(D, 0.123456789)
    vector = fedldp.VectorRandomizer("privunitg", D, 4.0, 1.0)
    calls = [
        (lambda: fedldp.privatize_update("privunitg", big, big),
         "randomizer must be a fedldp.VectorRandomizer, not str"),
        (lambda: fedldp.LdpFlRandomizer.layer_ranges(big, "x"),
         "layer_sizes must be a sequence of whole numbers >= 0, not str"),
        (lambda: fedldp.LdpFlRandomizer.layer_ranges(big, [D], "wide"),
         "margin must be a number, not str"),
        (lambda: fedldp.train_fedsel(big.reshape(2, 8), [0, 1], 3),
         "variant must be a str, not int"),
        (lambda: fedldp.train_fedsel(big.reshape(2, 8), [0, 1], central_epsilon="3"),
         "central_epsilon must be a number or None, not str"),
    ]
    for call, said in calls:
        with pytest.raises(TypeError) as raised:
            call()
        assert str(raised.value) == said
    assert fedldp.privatize_update(vector, big, big, rng=1).shape == (D,)
