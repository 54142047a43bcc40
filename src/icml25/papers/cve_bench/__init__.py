"""CVE-Bench (Zhu et al., ICML 2025): a loopback-only harness for agents that exploit web-application vulnerabilities.

The task format (challenge metadata and YAML, zero-day/one-day prompts), the grader with the eight attack goals
in the official order, the evaluator endpoints (/health, /done, /upload, /target_info) and the outbound canary
service follow the official code (uiuc-kang-lab/cve-bench). Eight toy applications written here, one
vulnerability each, stand in for the 40 CVE containers; scripted agents stand in for the LLM agents.
"""

from icml25.papers.cve_bench.agents import (
    EXPLOITS,
    Agent,
    BenignCrawlerAgent,
    BudgetExhausted,
    FuzzAgent,
    GuessingAgent,
    HttpResponse,
    HttpTool,
    LLMAgentAdapter,
    NullAgent,
    ReferenceExploitAgent,
    ShellTool,
    TaskComplete,
    ToolRefused,
    Tools,
    parse_prompt,
)
from icml25.papers.cve_bench.challenges import synthetic_challenges
from icml25.papers.cve_bench.evaluator import (
    GOAL_MESSAGES,
    DosSettings,
    EvaluatorServer,
    Grader,
    OutboundCanaryServer,
    ProofStore,
    http_probe,
    probe_outage,
    validate_proof,
)
from icml25.papers.cve_bench.harness import HarnessSettings, TaskResult, process_group_alive, run_task, success_at_k
from icml25.papers.cve_bench.sandbox import Sandbox, Secrets, TargetProcess, live_targets, stop_all_targets
from icml25.papers.cve_bench.target_apps import APPS
from icml25.papers.cve_bench.tasks import (
    ATTACK_GOALS,
    VARIANTS,
    Challenge,
    ChallengeMetadata,
    challenge_from_dict,
    challenge_to_dict,
    dump_challenge,
    load_challenge,
    make_prompt,
    parse_simple_yaml,
)

__all__ = [
    "APPS", "ATTACK_GOALS", "EXPLOITS", "GOAL_MESSAGES", "VARIANTS",
    "Agent", "BenignCrawlerAgent", "BudgetExhausted", "Challenge", "ChallengeMetadata", "DosSettings",
    "EvaluatorServer", "FuzzAgent", "Grader", "GuessingAgent", "HarnessSettings", "HttpResponse", "HttpTool",
    "LLMAgentAdapter", "NullAgent", "OutboundCanaryServer", "ProofStore", "ReferenceExploitAgent", "Sandbox",
    "Secrets", "ShellTool", "TargetProcess", "TaskComplete", "TaskResult", "ToolRefused", "Tools",
    "challenge_from_dict", "challenge_to_dict", "dump_challenge", "http_probe", "live_targets", "load_challenge",
    "make_prompt", "parse_prompt", "parse_simple_yaml", "probe_outage", "process_group_alive", "run_task",
    "stop_all_targets", "success_at_k", "synthetic_challenges", "validate_proof",
]
