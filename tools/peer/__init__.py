"""The real PanDA (panda-server with JEDI), DIRAC, WMCore, pilot and panda-client code, each installed from the
package index into its own environment under var/peer (setup.py and the *_setup.py modules), run on the same inputs
as our engine by its driver (*_driver.py, executed in that environment) and compared (compare.py, *_compare.py)."""
