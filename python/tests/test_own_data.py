"""Issue 44, item 5: an operator serves a file of their own and clients
bring files of their own, CSV or LIBSVM, each holding some classes only.
The task names its classes as the server's file writes them, and every
client's labels become those classes by name, not by their rank in a share
(a client holding only "yes" would otherwise train on "yes" as class 0)."""

import json

import numpy as np
import pytest

from fedldp_cli import finish, free_port, listening, run, start, start_clients

TOKENS = ["tokens/client-1.token", "tokens/client-2.token"]  # enrol --out-dir tokens


def write_csv(path, header, x, labels, label_at):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for row, label in zip(x, labels):
            fields = [f"{v:.6f}" for v in row]
            fields.insert(label_at, str(label))
            f.write(",".join(fields) + "\n")


def serve_own_file(cwd, label_column):
    """Two clients enrolled (TOKENS), and a server of rows.csv's 2,000 users
    for 2 epochs at eps 8, writing result.json: its port and process."""
    run("enrol", "--state", "s.sqlite", "--count", "2", "--out-dir", "tokens", cwd=cwd)
    port = free_port()
    server = start("serve", "--state", "s.sqlite", "--users", "2000", "--epsilon", "8",
                   "--epochs", "2", "--data", "rows.csv", "--label-column", label_column,
                   "--address", f"127.0.0.1:{port}", "--out", "result.json", cwd=cwd,
                   name="serve")
    listening(server, cwd / "serve.err")
    return port, server


def test_clients_of_one_class_each_train_the_servers_classes(tmp_path):
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, size=(2000, 5))
    y = np.where(x @ np.array([1.5, -1.0, 0.5, 0.0, 1.0]) > 0, "approved", "declined")
    header = ["a", "b", "decision", "c", "d", "e"]
    write_csv(tmp_path / "rows.csv", header, x, y, 2)
    # Client i holds one class only; the second's file puts the label last.
    for i, kind in enumerate(("approved", "declined")):
        mine = y == kind
        columns = ["a", "b", "c", "d", "e", "decision"] if i else header
        write_csv(tmp_path / f"local{i}.csv", columns, x[mine], y[mine], 5 if i else 2)
    port, server = serve_own_file(tmp_path, "decision")
    clients = start_clients(port, TOKENS, tmp_path,
                            extra=lambda i: ("--data", f"local{i}.csv", "--label-column",
                                             "decision"))
    finish({"serve": server, **clients}, tmp_path)
    said = json.loads((tmp_path / "result.json").read_text())
    # Ranked within each share, every label would be class 0: nothing learned.
    assert said["accuracy"] > said["majority"] + 15, said


def test_a_client_file_with_a_label_the_task_lacks_is_refused_at_once(tmp_path):
    write_csv(tmp_path / "rows.csv", ["a", "y"], [[0.5], [-0.5]] * 10, ["yes", "no"] * 10, 1)
    write_csv(tmp_path / "mine.csv", ["a", "y"], [[0.5], [-0.5]], ["yes", "maybe"], 1)
    run("enrol", "--state", "s.sqlite", "--count", "1", "--out", "token", cwd=tmp_path)
    port = free_port()
    server = start("serve", "--state", "s.sqlite", "--users", "2", "--data", "rows.csv",
                   "--address", f"127.0.0.1:{port}", cwd=tmp_path, name="serve")
    listening(server, tmp_path / "serve.err")
    client = run("client", "--server", f"127.0.0.1:{port}", "--token-file", "token", "--data",
                 "mine.csv", "--ledger", "l.sqlite", cwd=tmp_path, check=False)
    server.terminate()
    server.wait(timeout=30)
    assert client.returncode == 1
    assert "the label 'maybe' is none of the task's classes ('no', 'yes')" in client.stderr


def test_an_ldpfl_server_serves_its_own_file_and_network(tmp_path):
    """serve --protocol ldpfl --data rows.csv --model net.pt: the operator's
    rows (three named classes) standardise the inputs and score the model;
    the clients' CSV files hold two classes and one."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1500, 8))
    score = x @ rng.normal(size=8)
    y = np.select([score < -0.5, score < 0.5], ["low", "mid"], "high")
    write_csv(tmp_path / "rows.csv", [f"f{j}" for j in range(8)] + ["kind"], x, y, 8)
    halves = [np.isin(y, ["low", "mid"]), y == "high"]
    for i, mine in enumerate(halves):
        write_csv(tmp_path / f"local{i}.csv", [f"f{j}" for j in range(8)] + ["kind"], x[mine],
                  y[mine], 8)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    torch.jit.script(net).save(str(tmp_path / "net.pt"))
    run("enrol", "--state", "s.sqlite", "--count", "2", "--out-dir", "tokens", cwd=tmp_path)
    port, shuffler_port = free_port(), free_port()
    server = start("serve", "--protocol", "ldpfl", "--state", "s.sqlite", "--users", "4",
                   "--data", "rows.csv", "--model", "net.pt", "--address",
                   f"127.0.0.1:{port}", "--rounds", "3", "--randomizer", "privunitg", "--clip",
                   "1", "--epsilon", "8", "--shuffler-token-file", "shuffler.token", "--out",
                   "result.json", cwd=tmp_path, name="serve")
    listening(server, tmp_path / "serve.err")
    shuffler = start("shuffle", "--server", f"127.0.0.1:{port}", "--address",
                     f"127.0.0.1:{shuffler_port}", "--token-file", "shuffler.token",
                     "--min-batch", "2", cwd=tmp_path, name="shuffle")
    clients = start_clients(port, TOKENS, tmp_path, shuffler_port=shuffler_port,
                            extra=lambda i: ("--data", f"local{i}.csv", "--users", "2"))
    finish({"serve": server, "shuffle": shuffler, **clients}, tmp_path)
    said = json.loads((tmp_path / "result.json").read_text())
    assert said["dataset"] == "rows.csv" and said["rounds"] == 3, said
    extra = {"fedldp.json": ""}
    run("export", "--state", "s.sqlite", "--out", "model.pt", cwd=tmp_path)
    model = torch.jit.load(str(tmp_path / "model.pt"), _extra_files=extra)
    classes = {"high": 0, "low": 1, "mid": 2}  # the server's file's, in its order
    with torch.no_grad():
        predicted = model(torch.from_numpy(x.astype(np.float32))).argmax(1).numpy()
    truth = np.array([classes[k] for k in y])
    assert 100 * np.mean(predicted == truth) == pytest.approx(said["accuracy"], abs=1e-9)


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
    port, server = serve_own_file(tmp_path, "outcome")
    clients = start_clients(port, TOKENS, tmp_path,
                            extra=lambda i: ("--data", f"local{i}.svm", "--features", "6"))
    finish({"serve": server, **clients}, tmp_path)
    said = json.loads((tmp_path / "result.json").read_text())
    assert said["dataset"] == "rows.csv" and said["accuracy"] > said["majority"] + 10, said
    run("export", "--state", "s.sqlite", "--out", "model.npz", cwd=tmp_path)
    w = np.load(tmp_path / "model.npz")["weights"]
    rows = np.loadtxt(tmp_path / "rows.csv", delimiter=",", skiprows=1, dtype=np.float32)
    features, labels = np.delete(rows, 4, axis=1).astype(np.float64), rows[:, 4].astype(int)
    assert 100 * np.mean((features @ w > 0).astype(int) == labels) == said["accuracy"]


def test_a_fedsel_server_refuses_a_file_of_three_classes_at_once(tmp_path):
    write_csv(tmp_path / "rows.csv", ["a", "kind"], [[0.5], [0.1], [-0.5]] * 10,
              ["low", "mid", "high"] * 10, 1)
    run("enrol", "--state", "s.sqlite", "--count", "1", "--out", "token", cwd=tmp_path)
    served = run("serve", "--state", "s.sqlite", "--users", "30", "--data", "rows.csv",
                 "--address", f"127.0.0.1:{free_port()}", cwd=tmp_path, check=False)
    assert served.returncode != 0
    assert "FedSel's linear models need two classes; rows.csv has 3 (high, low, mid)" in \
        served.stderr, served.stderr
