#include <iostream>

#include "cli.h"

int main(int argc, char** argv) { return fedldp::cli::RunCli(argc, argv, std::cout, std::cerr); }
