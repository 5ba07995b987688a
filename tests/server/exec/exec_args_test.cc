#include "server/exec/exec_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace brig::exec {
namespace {

using protocol::Json;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseExecArgs, CommandRunsThroughTheShell) {
  auto a = parse_exec_args(Json{{"command", "echo hi | wc -c"}});
  ASSERT_TRUE(a) << a.error().to_string();
  EXPECT_EQ(a->argv, (std::vector<std::string>{"/bin/sh", "-c", "echo hi | wc -c"}));
  EXPECT_EQ(a->display, "echo hi | wc -c");
  EXPECT_EQ(a->max_output, kDefaultMaxOutput);
  EXPECT_EQ(a->yield_after, kDefaultYieldAfter);
  EXPECT_FALSE(a->timeout);
  EXPECT_FALSE(a->stdin_text);
  EXPECT_FALSE(a->stdin_open);
}

TEST(ParseExecArgs, ArgvRunsAsGivenAndDisplaysQuoted) {
  auto a = parse_exec_args(Json{{"argv", {"printf", "%s\n", "it's"}}});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->argv, (std::vector<std::string>{"printf", "%s\n", "it's"}));
  EXPECT_EQ(a->display, "printf '%s\n' 'it'\\''s'");
}

TEST(ParseExecArgs, ExactlyOneOfCommandAndArgv) {
  auto both = parse_exec_args(Json{{"command", "true"}, {"argv", {"true"}}});
  ASSERT_FALSE(both);
  EXPECT_THAT(both.error().to_string(), HasSubstr("exactly one of command"));
  EXPECT_FALSE(parse_exec_args(Json::object()));
  EXPECT_FALSE(parse_exec_args(Json{{"argv", Json::array()}}));
  EXPECT_FALSE(parse_exec_args(Json{{"argv", {""}}}));
  EXPECT_FALSE(parse_exec_args(Json{{"command", std::string("a\0b", 3)}}));
}

// Issue 15: a command or environment over about 64 KiB failed with an
// internal message about a spawner packet. It is refused up front, naming
// the limit and what to do instead.
TEST(ParseExecArgs, CommandAndEnvOverTheLimitAreRefusedSayingSo) {
  const std::string big(kMaxCommandBytes, 'x');
  for (const Json& args : {Json{{"command", "echo " + big}}, Json{{"argv", {"echo", big}}},
                           Json{{"command", "true"}, {"env", {{"DATA", big}}}}}) {
    auto a = parse_exec_args(args);
    ASSERT_FALSE(a);
    EXPECT_THAT(a.error().to_string(), HasSubstr("exec takes at most 32768"));
    EXPECT_THAT(a.error().to_string(), HasSubstr("stdin"));
  }
  EXPECT_TRUE(parse_exec_args(Json{{"command", std::string(kMaxCommandBytes - 100, 'x')}}));
}

TEST(ParseExecArgs, OptionsAndTheirBounds) {
  auto a = parse_exec_args(Json{{"command", "cat"},
                                {"cwd", "src"},
                                {"env", {{"A", "1"}, {"B_2", ""}}},
                                {"stdin", "input"},
                                {"stdin_open", true},
                                {"timeout", 1.5},
                                {"max_output", 100},
                                {"yield_after", 0}});
  ASSERT_TRUE(a) << a.error().to_string();
  EXPECT_EQ(a->cwd, "src");
  EXPECT_EQ(a->env, (std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B_2", ""}}));
  EXPECT_EQ(a->stdin_text, "input");
  EXPECT_TRUE(a->stdin_open);
  EXPECT_EQ(a->timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(a->max_output, 100u);
  EXPECT_EQ(a->yield_after, std::chrono::milliseconds(0));

  EXPECT_FALSE(parse_exec_args(Json{{"command", "x"}, {"timeout", 0}}));
  EXPECT_FALSE(parse_exec_args(Json{{"command", "x"}, {"max_output", 0}}));
  EXPECT_FALSE(parse_exec_args(Json{{"command", "x"}, {"max_output", kMaxMaxOutput + 1}}));
  EXPECT_FALSE(parse_exec_args(Json{{"command", "x"}, {"yield_after", 301}}));
  EXPECT_FALSE(parse_exec_args(Json{{"command", "x"}, {"env", {{"1A", "x"}}}}));
  EXPECT_FALSE(parse_exec_args(Json{{"command", "x"}, {"env", {{"A=B", "x"}}}}));
  EXPECT_FALSE(parse_exec_args(Json{{"command", "x"}, {"env", {{"A", std::string("\0", 1)}}}}));
}

jail::Mount mount(jail::Mount::Kind kind, std::string target) {
  jail::Mount m;
  m.kind = kind;
  m.target = target;
  m.source = target;
  return m;
}

jail::JailSpec view() {
  jail::JailSpec spec;
  spec.mounts = {mount(jail::Mount::Kind::proc, "/proc"), mount(jail::Mount::Kind::tmpfs, "/tmp"),
                 mount(jail::Mount::Kind::bind, "/usr"), mount(jail::Mount::Kind::bind, "/ws"),
                 mount(jail::Mount::Kind::mask, "/ws/secret")};
  return spec;
}

TEST(ResolveCwd, RelativeToTheWorkspaceAndNormalized) {
  EXPECT_EQ(resolve_cwd("src", "/ws", view()), "/ws/src");
  EXPECT_EQ(resolve_cwd("./a/../b/", "/ws", view()), "/ws/b");
  EXPECT_EQ(resolve_cwd("/tmp/x", "/ws", view()), "/tmp/x");
  EXPECT_EQ(resolve_cwd("/ws", "/ws", view()), "/ws");
  EXPECT_EQ(resolve_cwd("/ws/secretive", "/ws", view()), "/ws/secretive");
}

TEST(ResolveCwd, RefusesWhatTheJailDoesNotShow) {
  auto outside = resolve_cwd("../etc", "/ws", view());
  ASSERT_FALSE(outside);
  EXPECT_THAT(outside.error().why, HasSubstr("the jail does not contain it"));
  EXPECT_THAT(outside.error().why, HasSubstr("/usr"));
  EXPECT_EQ(outside.error().where, "/etc");
  auto hidden = resolve_cwd("secret/sub", "/ws", view());
  ASSERT_FALSE(hidden);
  EXPECT_THAT(hidden.error().why, HasSubstr("hidden by the policy"));
  EXPECT_FALSE(resolve_cwd("/", "/ws", view()));
}

TEST(PlanExec, EnvironmentIsThePoliciesPlusNonInteractiveDefaultsPlusArgs) {
  policy::Policy p;
  p.environment.pass = {"LANG", "TERM"};
  p.environment.set = {{"HOME", "/home/u"}, {"PAGER", "less"}};
  policy::Context ctx;
  ctx.workspace = "/ws";
  ctx.cwd = "/ws";
  ctx.env = {{"LANG", "C.UTF-8"}, {"TERM", "xterm"}, {"SECRET_TOKEN", "s3cr3t"}};
  auto args = parse_exec_args(
      Json{{"argv", {"env"}}, {"env", {{"EXTRA", "yes"}, {"GIT_EDITOR", "vi"}}}, {"timeout", 5}});
  ASSERT_TRUE(args);
  auto plan = plan_exec(p, ctx, view(), *args);
  ASSERT_TRUE(plan) << plan.error().to_string();
  const auto& env = plan->request.env;
  EXPECT_THAT(env, Contains("LANG=C.UTF-8"));
  EXPECT_THAT(env, Contains("HOME=/home/u"));
  EXPECT_THAT(env, Contains("PAGER=less"));     // the policy's set wins over the defaults
  EXPECT_THAT(env, Contains("TERM=dumb"));      // a passed TERM does not: there is no terminal
  EXPECT_THAT(env, Contains("GIT_EDITOR=vi"));  // the call's env wins over everything
  EXPECT_THAT(env, Contains("EXTRA=yes"));
  EXPECT_THAT(env, Contains("GIT_TERMINAL_PROMPT=0"));
  EXPECT_THAT(env, Not(Contains(HasSubstr("SECRET_TOKEN"))));
  EXPECT_EQ(plan->request.cwd, "/ws");
  EXPECT_EQ(plan->request.argv, (std::vector<std::string>{"env"}));
  EXPECT_EQ(plan->spec.limits.wall_time, std::chrono::milliseconds(5000));
}

TEST(PlanExec, TimeoutNeverExceedsThePolicysWallTime) {
  policy::Policy p;
  p.limits.wall_time = std::chrono::milliseconds(60'000);
  policy::Context ctx;
  ctx.workspace = "/ws";
  jail::JailSpec base = view();  // planned from p: its wall_time is the policy's
  base.limits.wall_time = p.limits.wall_time;
  auto args = parse_exec_args(Json{{"command", "true"}, {"timeout", 3600}, {"cwd", "/tmp"}});
  ASSERT_TRUE(args);
  auto plan = plan_exec(p, ctx, base, *args);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->spec.limits.wall_time, std::chrono::milliseconds(60'000));
  EXPECT_EQ(plan->request.cwd, "/tmp");
  auto bad = parse_exec_args(Json{{"command", "true"}, {"cwd", "/nowhere"}});
  EXPECT_FALSE(plan_exec(p, ctx, view(), *bad));
}

}  // namespace
}  // namespace brig::exec
