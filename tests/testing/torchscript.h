// A user's own network as a TorchScript file, written by Debian's Python
// and PyTorch (python3-torch, which setup.sh installs), as a user would:
// an MLP 784 -> hidden -> 10 returning logits, scripted and saved.
#ifndef FEDLDP_TESTS_TESTING_TORCHSCRIPT_H_
#define FEDLDP_TESTS_TESTING_TORCHSCRIPT_H_

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace fedldp::testing {

// "" once `path` holds the model, else why not. `poison`: a Python
// statement run on the model `m` before it is saved (a NaN weight, say).
inline std::string WriteTorchScriptMlp(const std::string& path, int hidden,
                                       const std::string& poison = "") {
  const std::string script =
      "import sys, torch\n"
      "torch.manual_seed(0)\n"
      "m = torch.nn.Sequential(torch.nn.Linear(784, " +
      std::to_string(hidden) + "), torch.nn.ReLU(), torch.nn.Linear(" + std::to_string(hidden) +
      ", 10))\n" + (poison.empty() ? "" : "with torch.no_grad(): " + poison + "\n") +
      "torch.jit.script(m).save(sys.argv[1])\n";
  const std::string command =
      "/usr/bin/python3 -c '" + script + "' '" + path + "' > /dev/null 2>&1";
  if (std::system(command.c_str()) != 0) {
    return "could not write a TorchScript model with /usr/bin/python3 and torch";
  }
  return {};
}

// "" once each path holds a model of one layer (fc, 784 -> 10) whose
// forward is its body, Python statements over the input x (a user's model
// that is wrong in its own way), else why not. One Python run writes all.
inline std::string WriteTorchScriptForwards(
    const std::vector<std::pair<std::string, std::string>>& path_and_body) {
  std::string script = "import sys, torch\n";
  for (std::size_t i = 0; i < path_and_body.size(); ++i) {
    const auto& [path, body] = path_and_body[i];
    std::string name = std::to_string(i);
    name.insert(name.begin(), 'M');
    script.append("class ").append(name).append("(torch.nn.Module):\n");
    script.append("    def __init__(self):\n        super().__init__()\n");
    script.append("        self.fc = torch.nn.Linear(784, 10)\n");
    script.append("    def forward(self, x):\n        ").append(body).append("\n");
    script.append("torch.jit.script(").append(name).append("()).save(\"").append(path);
    script.append("\")\n");
  }
  // From a file: torch.jit.script reads a class's source, which -c has not.
  const std::string source = path_and_body.at(0).first + ".py";
  std::ofstream(source) << script;
  const std::string command = "/usr/bin/python3 '" + source + "' > /dev/null 2>&1";
  const bool written = std::system(command.c_str()) == 0;
  std::remove(source.c_str());
  if (!written) return "could not script the models of " + source;
  return {};
}

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_TORCHSCRIPT_H_
