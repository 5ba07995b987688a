// `brig doctor`: what this kernel allows, found by trying, and what each
// shipped policy will really enforce here, with the remedy for what it won't.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "jail/kernel_features.h"
#include "jail/spec.h"

namespace brig::commands {

struct DoctorOptions {
  bool json = false;  // machine-readable output instead of the report
  // One more policy (a shipped name or a file) to plan and report, with its
  // LLM routes and whether each key is there; "" = the shipped ones only.
  std::string policy;
};

CLI::App* add_doctor_command(CLI::App& app, DoctorOptions& options);

// A policy's name and the jail it plans for the current user and directory.
using PlannedPolicy = std::pair<std::string, jail::JailSpec>;

// The report as text (the human form) or as a JSON document (--json).
std::string doctor_report(const jail::KernelFeatures& kernel,
                          const std::vector<PlannedPolicy>& policies, bool json);

// Probes, plans every shipped policy and prints the report on stdout.
// Exit status 0 when the default policy can run here, 1 when it would be refused.
int run_doctor(const DoctorOptions& options);

}  // namespace brig::commands
