# ipamd — the front door. `make run` and `make test` set up everything they need:
# Debian packages (when missing), the virtualenv from the hashed lock files, the state dirs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export IPAMD_CONFIG ?= $(CURDIR)/config/ipamd.toml

# Debian packages: the appliance needs postgresql; the tests also drive real DHCP clients and
# relays in network namespaces; the benchmark measures Kea with perfdhcp.
# libkrb5-dev: the gssapi package (ad_gsstsig DNS updates) builds against it.
RUN_PACKAGES := postgresql postgresql-contrib iproute2 libkrb5-dev
TEST_PACKAGES := $(RUN_PACKAGES) isc-dhcp-client isc-dhcp-relay busybox bind9 bind9-dnsutils pdns-server pdns-backend-sqlite3 \
	krb5-kdc krb5-admin-server
BENCH_PACKAGES := $(TEST_PACKAGES) kea-dhcp4-server kea-admin postgresql-client

.PHONY: run setup test lint bench clean image system-run system-test system-bench venv

venv: $(BIN)/.installed

$(BIN)/.installed: requirements.lock requirements-build.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r requirements-build.lock
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

define apt_ensure
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to install:$$missing" >&2; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

system-run:
	$(call apt_ensure,$(RUN_PACKAGES))

system-test:
	$(call apt_ensure,$(TEST_PACKAGES))

system-bench:
	$(call apt_ensure,$(BENCH_PACKAGES))

var:
	install -d -m 0755 var var/log var/supervisor

# Everything `make run` needs, without starting it (a systemd host: systemd/ipamd.service).
setup: system-run venv var

# The appliance in the foreground: supervisord runs postgres and ipamd (Ctrl-C stops both).
run: setup
	exec $(BIN)/supervisord -n -c appliance/supervisord.conf

test: system-test venv
	$(BIN)/python -m pytest

# ruff, then the import contract between the rooms (docs/DEVELOPING.md): a break names
# the file, the line and the import.
lint: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m tests.support.import_contract

bench: system-bench venv
	$(BIN)/python bench/run_all.py

# Reproducible appliance artifact (see image/README.md).
image: venv
	./image/build.sh

clean:
	rm -rf $(VENV) var build dist .pytest_cache .ruff_cache .hypothesis src/*.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
