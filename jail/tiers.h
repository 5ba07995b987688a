// The layer report and the fallback tier: what a jail will enforce, checked
// against what its spec requires, and the Landlock + seccomp tier a spec
// falls back to where the kernel refuses user namespaces (docs/jail.md,
// "Tiers"). The launcher calls these around its steps; nothing here makes a
// process or a namespace.
#pragma once

#include "jail/base/error.h"
#include "jail/child_plan.h"
#include "jail/layer_report.h"
#include "jail/spec.h"
#include "jail/steps/cgroups.h"

namespace brig::jail {

// The report as planned. Before the cgroups are made, `group` is an empty
// Group, and the cgroups entry says so until report_cgroups replaces it.
LayerReport report_layers(const JailSpec& spec, const ChildPlan& plan, const cgroups::Group& group);

// Sets the report's cgroups entry (in place, or appended) and limits tier.
void report_cgroups(LayerReport& report, const Limits& limits, const cgroups::Group& group);

// Fails (SetupStep::require) for a layer the spec requires that is not
// enforced. Before the cgroups are made (`cgroups_made` false), their entry
// is not known yet and is not checked.
Result<void> check_required(const JailSpec& spec, const LayerReport& report,
                            bool cgroups_made = true);

// Whether clone3's `err` is the kernel refusing a user namespace (limits,
// sysctls, LSMs) for a spec that may then run without namespaces.
bool may_fall_back(const JailSpec& spec, int err);

// The Landlock + seccomp tier (DESIGN.md): `plan` and `report` rewritten
// for a jail without namespaces, after clone3 refused them with `err`.
// Refuses where that tier would be meaningless or unsafe.
Result<void> fall_back_to_no_namespaces(const JailSpec& spec, ChildPlan& plan, LayerReport& report,
                                        int err);

// The error for a clone3 that failed with `err`, with the remedy when the
// kernel refused a user namespace.
Error clone_failed(const JailSpec& spec, int err);

}  // namespace brig::jail
