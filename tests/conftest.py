pytest_plugins = ["tests.fakes.conftest_plugin"]
