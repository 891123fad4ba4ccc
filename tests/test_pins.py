"""Dependency pins cover what is installed and tested, and the client internals sunkcheck relies on exist."""

import inspect
import re
import sys
import tomllib
from importlib.metadata import version

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tests.conftest import ROOT


def test_installed_kubernetes_client_is_inside_the_pinned_range_and_has_what_kube_py_calls() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    [pin] = [Requirement(d) for d in deps if Requirement(d).name == "kubernetes"]
    assert pin.specifier.contains(version("kubernetes")), f"installed kubernetes {version('kubernetes')} not in {pin}"
    assert pin.specifier.contains("37.999") and not pin.specifier.contains("36.0.3") and not pin.specifier.contains("38.0.0")
    from kubernetes.client import Configuration, rest
    from kubernetes.config.incluster_config import InClusterConfigLoader
    cfg = Configuration()
    assert {"host", "api_key", "ssl_ca_cert", "cert_file", "key_file", "verify_ssl", "tls_server_name", "proxy",
            "retries"} <= set(vars(cfg)) | {n for n in dir(Configuration) if isinstance(getattr(Configuration, n), property)}
    cfg.api_key["BearerToken"] = "Bearer x"
    assert cfg.auth_settings()["BearerToken"]["key"] == "authorization"
    assert callable(rest.RESTClientObject(cfg).pool_manager.request)
    assert {"token_filename", "cert_filename"} <= set(inspect.signature(InClusterConfigLoader).parameters)
    assert callable(InClusterConfigLoader.load_and_set)


def test_the_transport_is_imported_without_the_packages_inits_which_a_later_import_still_runs() -> None:
    """client.transport imports the client's Configuration and REST transport under bare stand-ins for `kubernetes`,
    `kubernetes.utils` and `urllib3.http2` (their __init__s import auth machinery, the YAML loaders and
    importlib.metadata, which a check never uses); a later plain import must still get the real packages, whole."""
    import subprocess
    import sys

    code = ("import sys\n"
            "before = set(sys.modules)\n"
            "from sunkcheck.collect.client import transport\n"
            "configuration, rest = transport()\n"
            "assert rest.RESTClientObject(configuration.Configuration()).pool_manager is not None\n"
            "skipped = {'kubernetes.utils.create_from_yaml', 'kubernetes.config', 'importlib.metadata'}\n"
            "assert not skipped & (set(sys.modules) - before), skipped & set(sys.modules)\n"
            "import kubernetes.utils, kubernetes, urllib3.http2\n"
            "assert kubernetes.utils.parse_quantity('1Ki') == 1024 and kubernetes.config.ConfigException\n"
            "assert kubernetes.client.configuration is configuration and callable(urllib3.http2.inject_into_urllib3)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_the_test_extra_runs_the_suite_the_dev_extra_lints_and_ci_installs_both() -> None:
    extras = {name: {Requirement(r).name for r in reqs}
              for name, reqs in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"].items()}
    assert extras["dev"] == {"ruff", "mypy", "radon"}
    # the suite runs mypy on a probe (tests/test_plan.py) and radon over the package (tests/test_house.py): the test
    # extra installs them too; ruff only lints
    assert extras["dev"] & extras["test"] == {"mypy", "radon"}
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.index("pip install -q -e '.[test,dev]'") < ci.index("ruff check") < ci.index("mypy")


def test_classifiers_agree_with_the_metadata_and_name_the_python_tested_here() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pythons = [m[1] for c in project["classifiers"] if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))]
    assert pythons and all(SpecifierSet(project["requires-python"]).contains(v) for v in pythons)
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in pythons
    assert project["license"] == {"text": "Apache-2.0"}
    assert "License :: OSI Approved :: Apache Software License" in project["classifiers"]
