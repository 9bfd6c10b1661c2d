"""Scenario files: YAML → validated models → expanded cases."""

from launchbench.scenario.core import Case
from launchbench.scenario.expand import expand_scenario
from launchbench.scenario.load import ScenarioFile, load_scenario, load_scenario_file
from launchbench.scenario.model import Scenario

__all__ = ["Case", "Scenario", "ScenarioFile", "expand_scenario", "load_scenario", "load_scenario_file"]
