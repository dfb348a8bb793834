"""pytest plugin for scripts/llama_server_tests.sh: llama.cpp's server suites first start
every preset server once so their models get downloaded (ServerPreset.load_all); offline there
is nothing to download, so that warm-up is skipped, for llama-server and triattn alike."""


def pytest_sessionstart(session):
    import utils  # tools/server/tests/utils.py, on sys.path through PYTHONPATH
    utils.ServerPreset.load_all = staticmethod(lambda: None)
