// A user's own network as a TorchScript file, written by Debian's Python
// and PyTorch (python3-torch, which setup.sh installs), as a user would:
// an MLP 784 -> hidden -> 10 returning logits, scripted and saved.
#ifndef FEDLDP_TESTS_TESTING_TORCHSCRIPT_H_
#define FEDLDP_TESTS_TESTING_TORCHSCRIPT_H_

#include <cstdlib>
#include <string>

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

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_TORCHSCRIPT_H_
