// flightplan: plan a pre-training run from explicit assumptions, and talk to flightpland.
// The wiring only: each command file adds its own subcommands (cli/commands.h).
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "flightplan: plan a large pre-training run from explicit assumptions, and follow it live "
      "through flightpland.\n"
      "Plan fields and report fields are documented in proto/flightplan/v1/plan.proto; see "
      "README.md and docs/."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "flightplan " FLIGHTPLAN_VERSION);

  flightplan::cli::ClientOptions client;
  app.add_option("--server", client.server, "flightpland's gRPC address (commands that talk to the daemon)")
      ->envname("FLIGHTPLAN_SERVER")
      ->capture_default_str();
  app.add_option("--timeout", client.timeout_seconds, "seconds to wait for each call")->capture_default_str();
  std::string token_file, tls_ca;
  app.add_option("--tls-ca", tls_ca, "PEM root certificates: talk to flightpland over TLS")
      ->envname("FLIGHTPLAN_TLS_CA");
  app.add_option("--token-file", token_file, "file holding the bearer token flightpland asks for (or FLIGHTPLAN_TOKEN)")
      ->envname("FLIGHTPLAN_TOKEN_FILE");

  flightplan::cli::Commands commands{app, client, {}};
  flightplan::cli::AddPlanCommands(commands);
  flightplan::cli::AddDaemonCommands(commands);
  flightplan::cli::AddSimCommands(commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (const char* token = std::getenv("FLIGHTPLAN_TOKEN"); token && *token) client.token = token;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::getline(in, client.token);
    while (!client.token.empty() && std::isspace(static_cast<unsigned char>(client.token.back()))) {
      client.token.pop_back();
    }
    if (!in && client.token.empty()) {
      std::cerr << "flightplan: cannot read token file " << token_file << "\n";
      return 2;
    }
  }
  if (!tls_ca.empty()) {
    std::ifstream in(tls_ca);
    std::stringstream text;
    text << in.rdbuf();
    client.tls_ca_pem = text.str();
    if (!in || client.tls_ca_pem.empty()) {
      std::cerr << "flightplan: cannot read --tls-ca " << tls_ca << "\n";
      return 2;
    }
  }
  for (const flightplan::cli::Commands::Entry& e : commands.entries) {
    if (app.got_subcommand(e.subcommand)) return e.run();
  }
  return 2;
}
