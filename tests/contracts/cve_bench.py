"""Contract cases of cve_bench: task format, prompts, upload validation, DoS probe, success@k, tools, harness.

No estimators or modules (the row is a benchmark harness).
"""

from icml25.papers.cve_bench import (
    Challenge,
    ChallengeMetadata,
    HarnessSettings,
    HttpTool,
    LLMAgentAdapter,
    NullAgent,
    ReferenceExploitAgent,
    Sandbox,
    Secrets,
    TargetProcess,
    ToolRefused,
    challenge_from_dict,
    make_prompt,
    parse_simple_yaml,
    probe_outage,
    run_task,
    success_at_k,
    synthetic_challenges,
    validate_proof,
)

_BASE = {"name": "x", "target": "sqli_shop", "goal": "db_access", "description": "d"}

BAD_INPUTS = [
    ("metadata.role", lambda: ChallengeMetadata(attacker_role="root"), ValueError),
    ("metadata.remote_url", lambda: ChallengeMetadata(application_url="http://10.0.0.1:80"), ValueError),
    ("metadata.no_port", lambda: ChallengeMetadata(application_url="http://127.0.0.1"), ValueError),
    ("metadata.dos_duration", lambda: ChallengeMetadata(denial_of_service_duration=0), ValueError),
    ("metadata.table_injection", lambda: ChallengeMetadata(secret_table_name="a; drop"), ValueError),
    ("metadata.relative_path", lambda: ChallengeMetadata(secret_file_path="srv/x"), ValueError),
    ("challenge.goal", lambda: Challenge("x", "sqli_shop", "pwn", "d"), ValueError),
    ("challenge.empty_name", lambda: Challenge("", "sqli_shop", "db_access", "d"), ValueError),
    ("challenge_from_dict.missing", lambda: challenge_from_dict({"name": "x"}), ValueError),
    ("challenge_from_dict.unknown", lambda: challenge_from_dict({**_BASE, "colour": 1}), ValueError),
    ("challenge_from_dict.meta_unknown", lambda: challenge_from_dict({**_BASE, "metadata": {"a": 1}}), ValueError),
    ("challenge_from_dict.variant", lambda: challenge_from_dict({**_BASE, "variants": {"x": None}}), ValueError),
    ("challenge_from_dict.not_mapping", lambda: challenge_from_dict([1]), ValueError),
    ("parse_simple_yaml.list", lambda: parse_simple_yaml("- a\n"), ValueError),
    ("parse_simple_yaml.tab", lambda: parse_simple_yaml("a:\n\tb: 1\n"), ValueError),
    ("make_prompt.variant", lambda: make_prompt(ChallengeMetadata(), "two_day"), ValueError),
    ("make_prompt.one_day_no_description", lambda: make_prompt(ChallengeMetadata(), "one_day", ""), ValueError),
    ("validate_proof.two_pairs", lambda: validate_proof('{"a": "1", "b": "2"}'), ValueError),
    ("validate_proof.long_value", lambda: validate_proof('{"a": "' + "v" * 257 + '"}'), ValueError),
    ("validate_proof.not_json", lambda: validate_proof("nope"), ValueError),
    ("probe_outage.duration", lambda: probe_outage(1, 0), ValueError),
    ("success_at_k.k0", lambda: success_at_k([[1]], 0), ValueError),
    ("success_at_k.too_few", lambda: success_at_k([[1]], 2), ValueError),
    ("success_at_k.empty", lambda: success_at_k([], 1), ValueError),
    ("HttpTool.remote", lambda: HttpTool((80,)).get("http://10.0.0.1:80/"), ToolRefused),
    ("HttpTool.port", lambda: HttpTool((80,)).get("http://127.0.0.1:81/"), ToolRefused),
    ("HttpTool.cap", lambda: HttpTool((80,), max_requests=0), ValueError),
    ("HarnessSettings.time", lambda: HarnessSettings(time_limit_s=0), ValueError),
    ("HarnessSettings.version", lambda: HarnessSettings(grader_version="v3"), ValueError),
    ("TargetProcess.app", lambda: TargetProcess("wordpress", Sandbox(), Secrets.generate(), {}), ValueError),
    ("ReferenceExploitAgent.target", lambda: ReferenceExploitAgent("wordpress"), ValueError),
    ("LLMAgentAdapter.max_messages", lambda: LLMAgentAdapter(lambda m: "", max_messages=0), ValueError),
    ("run_task.variant", lambda: run_task(synthetic_challenges()[0], NullAgent(), "two_day"), ValueError),
    ("Sandbox.path_escape", lambda: _escape(), ValueError),
]


def _escape():
    import os
    sb = Sandbox()
    os.symlink("/", sb.root / "up")
    try:
        return sb.path("/up/etc/passwd")
    finally:
        sb.cleanup()
