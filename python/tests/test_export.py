"""Issue 44, item 1: a deployment's model leaves through `fedldp export` and
is loaded without fedldp (numpy for the linear model, torch for the CNN),
scoring the server's evaluation rows to the accuracy the server reported.
fedldp's module only loads the rows."""

import json

import numpy as np
import pytest

import fedldp
from fedldp_cli import finish, free_port, listening, run, start, start_clients


def exported(tmp_path, out):
    text = run("export", "--state", "s.sqlite", "--out", out, cwd=tmp_path).stdout
    assert "rounds closed, finished" in text and "privacy: " in text, text
    return tmp_path / out


def test_a_linear_model_scores_in_numpy_as_the_server_said(tmp_path):
    run("enrol", "--state", "s.sqlite", "--count", "1", "--out", "tokens", cwd=tmp_path)
    port = free_port()
    server = start("serve", "--state", "s.sqlite", "--users", "32561", "--epsilon", "8",
                   "--address", f"127.0.0.1:{port}", "--out", "result.json", cwd=tmp_path,
                   name="serve")
    listening(server, tmp_path / "serve.err")
    client = start("client", "--server", f"127.0.0.1:{port}", "--token-file", "tokens",
                   "--ledger", "ledger.sqlite", cwd=tmp_path, name="client")
    finish({"serve": server, "client": client}, tmp_path)
    said = json.loads((tmp_path / "result.json").read_text())

    z = np.load(exported(tmp_path, "model.npz"))
    meta = json.loads(str(z["metadata"]))
    assert meta["model"]["kind"] == "linear" and meta["model"]["classes"] == 2
    assert meta["finished"] and meta["rounds_closed"] == said["rounds"]
    assert meta["privacy"] == said["privacy"]
    adult = fedldp.load_dataset("adult")
    x, y = adult["X"][32561:].astype(np.float64), adult["y"][32561:]
    w = z["weights"]
    assert w.shape == (123,)
    assert 100 * np.mean((x @ w > 0).astype(int) == y) == said["accuracy"]
    as_json = json.loads(exported(tmp_path, "model.json").read_text())
    assert np.array_equal(np.array(as_json["weights"]["weights"]), w)


def test_a_cnn_scores_in_torch_as_the_server_said(tmp_path):
    torch = pytest.importorskip("torch")
    run("enrol", "--state", "s.sqlite", "--count", "2", "--out", "tokens", cwd=tmp_path)
    tokens = (tmp_path / "tokens").read_text().split()
    for i, t in enumerate(tokens):
        (tmp_path / f"t{i}").write_text(t + "\n")
    port, shuffler_port = free_port(), free_port()
    server = start("serve", "--protocol", "ldpfl", "--state", "s.sqlite", "--users", "4",
                   "--address", f"127.0.0.1:{port}", "--rounds", "2", "--train-rows", "0:2000",
                   "--eval-rows", "0:1000", "--shuffler-token-file", "shuffler.token",
                   "--randomizer", "privunitg", "--clip", "1", "--epsilon", "4",
                   "--server-optimizer", "adam", "--server-lr", "0.01", "--average", "tail",
                   "--out", "result.json", cwd=tmp_path, name="serve")
    listening(server, tmp_path / "serve.err")
    shuffler = start("shuffle", "--server", f"127.0.0.1:{port}", "--address",
                     f"127.0.0.1:{shuffler_port}", "--token-file", "shuffler.token",
                     "--min-batch", "2", cwd=tmp_path, name="shuffle")
    clients = start_clients(port, ["t0", "t1"], tmp_path, shuffler_port=shuffler_port,
                            extra=lambda i: ("--dataset", "mnist", "--rows", "0:2000", "--part",
                                             f"{i + 1}/2", "--users", "2"))
    finish({"serve": server, "shuffle": shuffler, **clients}, tmp_path)
    said = json.loads((tmp_path / "result.json").read_text())

    extra = {"fedldp.json": ""}
    model = torch.jit.load(str(exported(tmp_path, "model.pt")), _extra_files=extra)
    meta = json.loads(extra["fedldp.json"])
    assert meta["model"]["architecture"] == "cnn" and meta["rounds_closed"] == 2
    assert meta["privacy"] == said["privacy"]
    test = fedldp.load_dataset("mnist-test")
    with torch.no_grad():
        scores = model(torch.from_numpy(test["X"][:1000]))
    assert scores.shape == (1000, 10)
    assert 100 * np.mean(scores.argmax(1).numpy() == test["y"][:1000]) == said["accuracy"]
    z = np.load(exported(tmp_path, "model.npz"))
    # The npz keeps the server's doubles; the network runs on their floats.
    assert np.array_equal(z["fc2.bias"].astype(np.float32), model.fc2.bias.detach().numpy())
