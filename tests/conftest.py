"""Suite-wide pytest configuration.

``pytest_plugins`` may only be declared here, at the top of the tests: the jupyter-server fixtures
(``jp_fetch`` and friends) are used by tests/server.
"""

pytest_plugins = ["pytest_jupyter.jupyter_server"]
