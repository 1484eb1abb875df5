"""Issue 44, item 1: a deployment's model leaves through `fedldp export` and
is loaded without fedldp (numpy for the linear model, torch for the CNN),
scoring the server's evaluation rows to the accuracy the server reported.
fedldp's module only loads the rows."""

import json

import numpy as np
import pytest

import fedldp
from fedldp_cli import finish, free_port, listening, run, start


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
    clients = {
        f"client{i}": start("client", "--server", f"127.0.0.1:{port}", "--shuffler",
                            f"127.0.0.1:{shuffler_port}", "--token-file", f"t{i}",
                            "--dataset", "mnist", "--rows", "0:2000", "--part", f"{i + 1}/2",
                            "--users", "2", "--ledger", f"ledger{i}.sqlite", cwd=tmp_path,
                            name=f"client{i}")
        for i in range(2)
    }
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


def test_the_operators_own_file_is_served_and_its_model_scores_the_same(tmp_path):
    """Issue 44, item 5: serve --data FILE.csv (the operator's own rows,
    with a named label column), clients with their own LIBSVM files; the
    exported model scores the file's rows as the server said."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=(2000, 6))
    y = (x @ np.array([1.0, -2.0, 0.5, 0.0, 1.5, -1.0]) > 0).astype(int)
    with open(tmp_path / "rows.csv", "w") as f:
        f.write("a,b,c,d,outcome,e,g\n")
        for row, label in zip(x, y):
            f.write(",".join(f"{v:.6f}" for v in row[:4]) + f",{label}," +
                    ",".join(f"{v:.6f}" for v in row[4:]) + "\n")
    for part in (0, 1):
        with open(tmp_path / f"local{part}.svm", "w") as f:
            for row, label in zip(x[part::2], y[part::2]):
                f.write(f"{label} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row)) + "\n")
    run("enrol", "--state", "s.sqlite", "--count", "2", "--out-dir", "tokens", cwd=tmp_path)
    port = free_port()
    server = start("serve", "--state", "s.sqlite", "--users", "2000", "--epsilon", "8",
                   "--epochs", "2", "--data", "rows.csv", "--label-column", "outcome",
                   "--address", f"127.0.0.1:{port}", "--out", "result.json", cwd=tmp_path,
                   name="serve")
    listening(server, tmp_path / "serve.err")
    clients = {
        f"client{i}": start("client", "--server", f"127.0.0.1:{port}", "--token-file",
                            f"tokens/client-{i + 1}.token", "--data", f"local{i}.svm",
                            "--features", "6", "--ledger", f"l{i}.sqlite", cwd=tmp_path,
                            name=f"client{i}")
        for i in (0, 1)
    }
    finish({"serve": server, **clients}, tmp_path)
    said = json.loads((tmp_path / "result.json").read_text())
    assert said["dataset"] == "rows.csv" and said["accuracy"] > said["majority"] + 10, said
    w = np.load(exported(tmp_path, "model.npz"))["weights"]
    rows = np.loadtxt(tmp_path / "rows.csv", delimiter=",", skiprows=1, dtype=np.float32)
    features, labels = np.delete(rows, 4, axis=1).astype(np.float64), rows[:, 4].astype(int)
    assert 100 * np.mean((features @ w > 0).astype(int) == labels) == said["accuracy"]
