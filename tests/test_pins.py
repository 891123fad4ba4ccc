"""Dependency pins cover what is installed and tested, and the client internals sunkcheck relies on exist."""

import inspect
import tomllib
from importlib.metadata import version

from packaging.requirements import Requirement

from tests.conftest import ROOT


def test_installed_kubernetes_client_is_inside_the_pinned_range_and_has_the_internals_kube_py_calls():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    [pin] = [Requirement(d) for d in deps if Requirement(d).name == "kubernetes"]
    assert pin.specifier.contains(version("kubernetes")), f"installed kubernetes {version('kubernetes')} not in {pin}"
    assert pin.specifier.contains("37.999") and not pin.specifier.contains("36.0.3") and not pin.specifier.contains("38.0.0")
    from kubernetes.client import ApiClient
    serialize = inspect.signature(ApiClient.param_serialize).parameters
    assert {"method", "resource_path", "query_params", "header_params", "auth_settings"} <= set(serialize)
    assert list(inspect.signature(ApiClient.call_api).parameters)[1:4] == ["method", "url", "header_params"]
    assert "_request_timeout" in inspect.signature(ApiClient.call_api).parameters
