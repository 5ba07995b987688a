#include "server/egress/dns_message.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace brig::egress {
namespace {

using Bytes = std::vector<std::uint8_t>;

// What dig 9.18 sends for `dig example.com`: id, flags RD|AD (0x0120), one
// question, one additional (EDNS OPT: UDP size 1232, a COOKIE option of 8
// bytes).
const Bytes kDigQuery = {
    0x1a, 0x2b, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,        // header
    0x07, 'e',  'x',  'a',  'm',  'p',  'l',  'e',  0x03, 'c',  'o',  'm',  0x00,  // name
    0x00, 0x01, 0x00, 0x01,                                                        // A IN
    0x00, 0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c,              // OPT
    0x00, 0x0a, 0x00, 0x08, 0x5f, 0x2e, 0x91, 0x04, 0x3c, 0x7a, 0x11, 0xe0,        // COOKIE
};

// `dig +noedns -t AAAA Example.COM`: no additional section.
const Bytes kDigQueryNoEdns = {
    0xbe, 0xef, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,        // header
    0x07, 'E',  'x',  'a',  'm',  'p',  'l',  'e',  0x03, 'C',  'O',  'M',  0x00,  // name
    0x00, 0x1c, 0x00, 0x01,                                                        // AAAA IN
};

// A query of one question from its labels (raw, so a test can put any byte
// in them), with `additional` appended and counted as `arcount` records.
Bytes query(const std::vector<std::string>& labels, std::uint16_t type = kTypeA,
            std::uint16_t flags = 0x0100, const Bytes& additional = {}, std::uint16_t arcount = 0) {
  Bytes m = {0x12,
             0x34,
             static_cast<std::uint8_t>(flags >> 8),
             static_cast<std::uint8_t>(flags),
             0,
             1,
             0,
             0,
             0,
             0,
             static_cast<std::uint8_t>(arcount >> 8),
             static_cast<std::uint8_t>(arcount)};
  for (const std::string& l : labels) {
    m.push_back(static_cast<std::uint8_t>(l.size()));
    m.insert(m.end(), l.begin(), l.end());
  }
  m.push_back(0);
  m.insert(m.end(), {static_cast<std::uint8_t>(type >> 8), static_cast<std::uint8_t>(type), 0, 1});
  m.insert(m.end(), additional.begin(), additional.end());
  return m;
}

const Bytes kOpt = {0x00, 0x00, 0x29, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

policy::Address v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  return policy::Address{.v6 = false, .bytes = {a, b, c, d}};
}

policy::Address v6_loopback_plus(std::uint8_t last) {
  policy::Address a{.v6 = true, .bytes = {}};
  a.bytes[0] = 0xfd;
  a.bytes[15] = last;
  return a;
}

// ----- a test-side reader of responses, independent of the code under test ----------

struct Record {
  std::string name;
  std::uint16_t type = 0, klass = 0;
  std::uint32_t ttl = 0;
  Bytes rdata;
};

struct Response {
  std::uint16_t id = 0, flags = 0, qdcount = 0, ancount = 0, nscount = 0, arcount = 0;
  Bytes question;  // the question section's bytes as they are in the message
  std::string qname;
  std::uint16_t qtype = 0, qclass = 0;
  std::vector<Record> answers;
};

struct ByteReader {
  const Bytes& m;
  std::size_t pos = 0;
  std::optional<std::uint8_t> u8() {
    if (pos >= m.size()) return std::nullopt;
    return m[pos++];
  }
  std::optional<std::uint16_t> u16() {
    auto hi = u8(), lo = u8();
    if (!hi || !lo) return std::nullopt;
    return static_cast<std::uint16_t>(*hi << 8 | *lo);
  }
  std::optional<std::uint32_t> u32() {
    auto hi = u16(), lo = u16();
    if (!hi || !lo) return std::nullopt;
    return static_cast<std::uint32_t>(*hi) << 16 | *lo;
  }
  // A name, following compression pointers (at most 16 of them).
  std::optional<std::string> name() {
    std::string out;
    std::size_t at = pos;
    bool jumped = false;
    for (int hops = 0; hops <= 16;) {
      if (at >= m.size()) return std::nullopt;
      const std::uint8_t len = m[at++];
      if (len == 0) {
        if (!jumped) pos = at;
        return out;
      }
      if ((len & 0xC0) == 0xC0) {
        if (at >= m.size()) return std::nullopt;
        const std::size_t target = static_cast<std::size_t>(len & 0x3F) << 8 | m[at++];
        if (!jumped) pos = at;
        jumped = true;
        at = target;
        ++hops;
        continue;
      }
      if (at + len > m.size()) return std::nullopt;
      if (!out.empty()) out += '.';
      out.append(m.begin() + static_cast<std::ptrdiff_t>(at),
                 m.begin() + static_cast<std::ptrdiff_t>(at + len));
      at += len;
    }
    return std::nullopt;
  }
};

std::optional<Response> read_response(const Bytes& m) {
  ByteReader r{m};
  Response out;
  for (std::uint16_t* field :
       {&out.id, &out.flags, &out.qdcount, &out.ancount, &out.nscount, &out.arcount}) {
    auto v = r.u16();
    if (!v) return std::nullopt;
    *field = *v;
  }
  const std::size_t question_start = r.pos;
  if (out.qdcount == 1) {
    auto name = r.name();
    auto type = r.u16(), klass = r.u16();
    if (!name || !type || !klass) return std::nullopt;
    out.qname = *name;
    out.qtype = *type;
    out.qclass = *klass;
  }
  out.question.assign(m.begin() + static_cast<std::ptrdiff_t>(question_start),
                      m.begin() + static_cast<std::ptrdiff_t>(r.pos));
  for (std::uint16_t i = 0; i < out.ancount; ++i) {
    Record rec;
    auto name = r.name();
    auto type = r.u16(), klass = r.u16();
    auto ttl = r.u32();
    auto rdlength = r.u16();
    if (!name || !type || !klass || !ttl || !rdlength) return std::nullopt;
    rec.name = *name;
    rec.type = *type;
    rec.klass = *klass;
    rec.ttl = *ttl;
    for (std::uint16_t b = 0; b < *rdlength; ++b) {
      auto byte = r.u8();
      if (!byte) return std::nullopt;
      rec.rdata.push_back(*byte);
    }
    out.answers.push_back(std::move(rec));
  }
  if (r.pos != m.size()) return std::nullopt;
  return out;
}

// The question section of a query as it was sent.
Bytes question_of(const Bytes& q) {
  std::size_t end = 12;
  while (q[end] != 0) end += 1 + q[end];
  return Bytes(q.begin() + 12, q.begin() + static_cast<std::ptrdiff_t>(end + 5));
}

// ----- queries -----------------------------------------------------------------------

TEST(DnsMessage, DigQueryWithEdns) {
  auto q = parse_dns_query(kDigQuery);
  ASSERT_TRUE(q) << q.error().to_string();
  EXPECT_EQ(q->id, 0x1a2b);
  EXPECT_TRUE(q->recursion_desired);
  EXPECT_EQ(q->name, "example.com");
  EXPECT_EQ(q->type, kTypeA);
  EXPECT_EQ(q->klass, kClassIN);
}

TEST(DnsMessage, DigQueryWithoutEdnsAndMixedCase) {
  auto q = parse_dns_query(kDigQueryNoEdns);
  ASSERT_TRUE(q) << q.error().to_string();
  EXPECT_EQ(q->id, 0xbeef);
  EXPECT_EQ(q->name, "example.com");
  EXPECT_EQ(q->name_as_sent, "Example.COM");
  EXPECT_EQ(q->type, kTypeAAAA);
}

TEST(DnsMessage, RootAndLongestNames) {
  auto q = parse_dns_query(query({}, 2));
  ASSERT_TRUE(q) << q.error().to_string();
  EXPECT_EQ(q->name, "");
  EXPECT_TRUE(q->recursion_desired);

  // 255 bytes on the wire: 3 labels of 63, one of 61, the root.
  const std::string l63(63, 'a');
  q = parse_dns_query(query({l63, l63, l63, std::string(61, 'b')}));
  ASSERT_TRUE(q) << q.error().to_string();
  EXPECT_EQ(q->name.size(), 253u);
}

TEST(DnsMessage, Refusals) {
  const std::string l63(63, 'a');
  Bytes loop = query({"a"});
  loop.resize(12);
  loop.insert(loop.end(), {0xC0, 0x0C, 0, 1, 0, 1});  // the name points at itself
  Bytes pair = query({"a"});
  pair.resize(12);
  pair.insert(pair.end(), {0x01, 'a', 0xC0, 0x0C, 0, 1, 0, 1});  // a label, then back to it
  Bytes forward = query({"a"});
  forward.resize(12);
  forward.insert(forward.end(), {0xC0, 0x0E, 0x01, 'a', 0x00, 0, 1, 0, 1});
  Bytes two_questions = query({"a"});
  two_questions[5] = 2;
  two_questions.insert(two_questions.end(), {0x01, 'b', 0x00, 0, 1, 0, 1});
  Bytes no_question = query({"a"});
  no_question.resize(12);
  no_question[5] = 0;
  Bytes with_answer =
      query({"a"}, kTypeA, 0x0100, {0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4});
  with_answer[7] = 1;
  Bytes with_authority = query({"a"}, kTypeA, 0x0100, kOpt);
  with_authority[9] = 1;
  Bytes opt_long = kOpt;
  opt_long[10] = 4;  // rdlength 4, no rdata
  Bytes opt_named = kOpt;
  opt_named[0] = 0xC0;
  opt_named.insert(opt_named.begin() + 1, 0x0C);
  Bytes extended = query({"a"});
  extended[12] = 0x41;  // label type 01 (EDNS0 extended label)
  const Bytes a_record = {0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4};
  Bytes trailing = query({"a"});
  trailing.push_back(0);

  struct Case {
    const char* what;
    Bytes message;
    std::string_view why;
  };
  const Case cases[] = {
      {"empty", {}, "shorter than a DNS header"},
      {"11 bytes", Bytes(kDigQuery.begin(), kDigQuery.begin() + 11), "shorter than a DNS header"},
      {"a response", query({"a"}, kTypeA, 0x8100), "QR 1"},
      {"opcode 1 (IQUERY)", query({"a"}, kTypeA, 0x0900), "opcode 1"},
      {"opcode 5 (UPDATE)", query({"a"}, kTypeA, 0x2800), "opcode 5"},
      {"no question", no_question, "0 questions"},
      {"two questions", two_questions, "2 questions"},
      {"an answer record", with_answer, "answer"},
      {"an authority record", with_authority, "authority"},
      {"a pointer loop to itself", loop, "compression pointer"},
      {"a pointer back to its own label", pair, "compression pointer"},
      {"a pointer forward", forward, "compression pointer"},
      {"an extended label type", extended, "label type"},
      {"a label of 64 bytes", query({std::string(64, 'a')}), ""},
      {"a name of 256 bytes", query({l63, l63, l63, std::string(62, 'b')}), "255"},
      {"a name of many short labels", query(std::vector<std::string>(128, "a")), "255"},
      {"a '.' inside a label", query({"a.b", "test"}), "'.' or NUL"},
      {"a NUL inside a label", query({std::string("a\0b", 3), "test"}), "'.' or NUL"},
      {"a trailing byte", trailing, "1 bytes after"},
      {"an A record in additional", query({"a"}, kTypeA, 0x0100, a_record, 1),
       "other than EDNS OPT"},
      {"two OPT records",
       query(
           {"a"}, kTypeA, 0x0100,
           [] {
             Bytes b = kOpt;
             b.insert(b.end(), kOpt.begin(), kOpt.end());
             return b;
           }(),
           2),
       "more than one"},
      {"OPT with a pointer for its owner", query({"a"}, kTypeA, 0x0100, opt_named, 1),
       "other than EDNS OPT"},
      {"OPT data cut off", query({"a"}, kTypeA, 0x0100, opt_long, 1), "cut off"},
      {"additional counted, not there", query({"a"}, kTypeA, 0x0100, {}, 1), "cut off"},
      {"OPT not counted", query({"a"}, kTypeA, 0x0100, kOpt, 0), "after the query"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto q = parse_dns_query(c.message);
    ASSERT_FALSE(q) << q->name;
    EXPECT_NE(q.error().why.find(c.why), std::string::npos) << q.error().why;
  }
}

TEST(DnsMessage, EveryTruncationIsRefused) {
  for (const Bytes& whole : {kDigQuery, kDigQueryNoEdns}) {
    for (std::size_t n = 0; n < whole.size(); ++n) {
      SCOPED_TRACE(n);
      EXPECT_FALSE(
          parse_dns_query(Bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n))));
    }
    EXPECT_TRUE(parse_dns_query(whole));
  }
}

// ----- responses ---------------------------------------------------------------------

TEST(DnsMessage, AnswerReadBack) {
  auto q = parse_dns_query(kDigQuery);
  ASSERT_TRUE(q);
  const policy::Address addresses[] = {v4(10, 1, 2, 7), v6_loopback_plus(1), v4(192, 0, 2, 1)};
  const Bytes m = dns_response(*q, Rcode::noerror, addresses, 300);
  auto r = read_response(m);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, 0x1a2b);
  EXPECT_EQ(r->flags & 0x8000, 0x8000) << "QR";
  EXPECT_EQ(r->flags & 0x7800, 0) << "opcode";
  EXPECT_EQ(r->flags & 0x0400, 0) << "AA";
  EXPECT_EQ(r->flags & 0x0200, 0) << "TC";
  EXPECT_EQ(r->flags & 0x0100, 0x0100) << "RD";
  EXPECT_EQ(r->flags & 0x0080, 0x0080) << "RA";
  EXPECT_EQ(r->flags & 0x000F, 0) << "rcode";
  EXPECT_EQ(r->qdcount, 1);
  EXPECT_EQ(r->nscount, 0);
  EXPECT_EQ(r->arcount, 0);
  EXPECT_EQ(r->question, question_of(kDigQuery));
  ASSERT_EQ(r->answers.size(), 2u);
  EXPECT_EQ(r->ancount, 2);
  for (const Record& a : r->answers) {
    EXPECT_EQ(a.name, "example.com");
    EXPECT_EQ(a.type, kTypeA);
    EXPECT_EQ(a.klass, kClassIN);
    EXPECT_EQ(a.ttl, 300u);
  }
  EXPECT_EQ(r->answers[0].rdata, (Bytes{10, 1, 2, 7}));
  EXPECT_EQ(r->answers[1].rdata, (Bytes{192, 0, 2, 1}));
  // Each answer's owner is a pointer to the question's name at offset 12.
  const std::size_t first_answer = 12 + question_of(kDigQuery).size();
  EXPECT_EQ(m[first_answer], 0xC0);
  EXPECT_EQ(m[first_answer + 1], 12);
}

TEST(DnsMessage, AaaaTakesTheIpv6AddressesAndEchoesTheCaseSent) {
  auto q = parse_dns_query(kDigQueryNoEdns);
  ASSERT_TRUE(q);
  const policy::Address addresses[] = {v4(10, 1, 2, 7), v6_loopback_plus(5)};
  auto r = read_response(dns_response(*q, Rcode::noerror, addresses, 60));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->question, question_of(kDigQueryNoEdns));
  EXPECT_EQ(r->qname, "Example.COM");
  ASSERT_EQ(r->answers.size(), 1u);
  EXPECT_EQ(r->answers[0].type, kTypeAAAA);
  EXPECT_EQ(r->answers[0].rdata.size(), 16u);
  EXPECT_EQ(r->answers[0].rdata[0], 0xfd);
  EXPECT_EQ(r->answers[0].rdata[15], 5);
}

TEST(DnsMessage, A0x20QueryIsEchoedByteForByte) {
  const Bytes sent = query({"wWw", "PyPi", "oRG"});
  auto q = parse_dns_query(sent);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->name, "www.pypi.org");
  auto r = read_response(dns_response(*q, Rcode::noerror, {}, 60));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->question, question_of(sent));
}

TEST(DnsMessage, AQueryBuiltByHandEchoesItsName) {
  DnsQuery q;
  q.id = 7;
  q.name = "a.test";
  q.type = kTypeA;
  q.klass = kClassIN;
  auto r = read_response(dns_response(q, Rcode::noerror, std::vector{v4(1, 2, 3, 4)}, 1));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->qname, "a.test");
  EXPECT_EQ(r->flags & 0x0100, 0) << "RD not asked";
  ASSERT_EQ(r->answers.size(), 1u);
  // name_as_sent that is not `name` in other case is not echoed.
  q.name_as_sent = "b.test";
  r = read_response(dns_response(q, Rcode::noerror, {}, 1));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->qname, "a.test");
}

TEST(DnsMessage, NoAnswersForOtherTypesClassesAndFailures) {
  const std::vector addresses = {v4(10, 0, 0, 1), v6_loopback_plus(1)};
  auto mx = parse_dns_query(query({"a", "test"}, 15));
  ASSERT_TRUE(mx);
  auto r = read_response(dns_response(*mx, Rcode::noerror, addresses, 60));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ancount, 0);
  EXPECT_EQ(r->qtype, 15);

  auto a = parse_dns_query(query({"a", "test"}));
  ASSERT_TRUE(a);
  for (Rcode rc : {Rcode::refused, Rcode::nxdomain, Rcode::servfail}) {
    r = read_response(dns_response(*a, rc, addresses, 60));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->ancount, 0);
    EXPECT_EQ(r->flags & 0x000F, static_cast<int>(rc));
  }

  Bytes chaos = query({"version", "bind"}, 16);
  chaos[chaos.size() - 1] = 3;  // class CH
  auto ch = parse_dns_query(chaos);
  ASSERT_TRUE(ch);
  EXPECT_EQ(ch->klass, 3);
  r = read_response(dns_response(*ch, Rcode::noerror, addresses, 60));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ancount, 0);
  EXPECT_EQ(r->question, question_of(chaos));
}

TEST(DnsMessage, RootQueryResponse) {
  auto q = parse_dns_query(query({}, kTypeA));
  ASSERT_TRUE(q);
  auto r = read_response(dns_response(*q, Rcode::noerror, std::vector{v4(1, 1, 1, 1)}, 5));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->question, (Bytes{0, 0, 1, 0, 1}));
  ASSERT_EQ(r->answers.size(), 1u);
  EXPECT_EQ(r->answers[0].name, "");
}

// ----- errors ------------------------------------------------------------------------

TEST(DnsMessage, ErrorCarriesTheIdOfWhatDidNotParse) {
  Bytes garbage = {0xab, 0xcd, 0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xC0};
  auto e = dns_error(garbage, Rcode::formerr);
  ASSERT_TRUE(e);
  auto r = read_response(*e);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, 0xabcd);
  EXPECT_EQ(r->flags, 0x8000 | 0x0100 | 0x0080 | 1);
  EXPECT_EQ(r->qdcount + r->ancount + r->nscount + r->arcount, 0);
  EXPECT_EQ(e->size(), 12u);

  garbage[2] = 0x28;  // UPDATE, RD clear: the opcode is echoed
  e = dns_error(garbage, Rcode::refused);
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)[2], 0x80 | 0x28);
  EXPECT_EQ((*e)[3], 0x80 | 5);

  EXPECT_TRUE(dns_error(Bytes(12, 0), Rcode::formerr));
  EXPECT_FALSE(dns_error(Bytes(11, 0), Rcode::formerr));
  EXPECT_FALSE(dns_error({}, Rcode::formerr));
  Bytes response = garbage;
  response[2] = 0x81;  // QR set
  EXPECT_FALSE(dns_error(response, Rcode::formerr));
}

// ----- random and mutated input ------------------------------------------------------

// Whatever arrives, parsing ends, and what parses answers in a form the
// independent reader reads back with the question exactly as it was sent.
TEST(DnsMessage, MutatedInputNeverCrashesAndParsedQueriesAnswer) {
  const Bytes seeds[] = {kDigQuery, kDigQueryNoEdns, query({"wWw", "a", "test"}, kTypeAAAA),
                         query({}, kTypeA, 0, kOpt, 1)};
  const std::uint8_t interesting[] = {0x00, 0x01, 0x29, 0x2e, 0x3f, 0x40, 0x41,
                                      0x80, 0xC0, 0xC0, 0x0C, 0xff, 'A',  'z'};
  const policy::Address addresses[] = {v4(10, 1, 2, 7), v6_loopback_plus(1)};
  std::mt19937 rng(1035);
  int parsed = 0;
  for (int i = 0; i < 40000; ++i) {
    Bytes m = seeds[rng() % std::size(seeds)];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !m.empty(); ++e) {
      const std::size_t at = rng() % m.size();
      const std::uint8_t b = rng() % 2 ? interesting[rng() % std::size(interesting)]
                                       : static_cast<std::uint8_t>(rng());
      switch (rng() % 4) {
        case 0:
          m[at] = b;
          break;
        case 1:
          m.insert(m.begin() + static_cast<std::ptrdiff_t>(at), b);
          break;
        case 2:
          m.erase(m.begin() + static_cast<std::ptrdiff_t>(at));
          break;
        case 3:
          m.resize(at);
          break;
      }
    }
    if (i % 10 == 0) {
      m.resize(rng() % 600);
      for (auto& b : m) b = static_cast<std::uint8_t>(rng());
    }
    SCOPED_TRACE(testing::PrintToString(m));
    auto e = dns_error(m, Rcode::formerr);
    EXPECT_EQ(e.has_value(), m.size() >= 12 && (m[2] & 0x80) == 0);
    auto q = parse_dns_query(m);
    if (!q) {
      EXPECT_FALSE(q.error().why.empty());
      continue;
    }
    ++parsed;
    EXPECT_LE(q->name.size(), 253u);
    if (!q->name.empty()) {
      EXPECT_NE(q->name.back(), '.');
    }
    for (char c : q->name) EXPECT_FALSE(c >= 'A' && c <= 'Z');
    auto r = read_response(dns_response(*q, Rcode::noerror, addresses, 30));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->id, q->id);
    EXPECT_EQ(r->question, question_of(m));
    const bool answered = q->klass == kClassIN && (q->type == kTypeA || q->type == kTypeAAAA);
    EXPECT_EQ(r->ancount, answered ? 1 : 0);
  }
  EXPECT_GT(parsed, 1000);
}

}  // namespace
}  // namespace brig::egress
